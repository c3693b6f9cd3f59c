package redaction

// hasCardOrID reports a Luhn-valid card number (13-19 digits, bare or in
// groups of at least three split by single spaces or hyphens) or an
// 18-character Chinese ID number with a valid check digit, standing alone
// in s (not glued to letters or digits: O2024... is an order number).
func hasCardOrID(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if isDigit(s[i]) {
			n++
		}
	}
	if n < 13 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) || i > 0 && isAlnum(s[i-1]) {
			continue
		}
		var buf [20]byte
		digits, end := scanGroups(s, i, buf[:0])
		switch {
		case end < len(s) && (s[end] == 'X' || s[end] == 'x') && len(digits) == 17 && end-i == 17 &&
			(end+1 == len(s) || !isAlnum(s[end+1])):
			if validID(append(digits, 'X')) {
				return true
			}
		case end < len(s) && isAlnum(s[end]):
		case len(digits) == 18 && end-i == 18 && validID(digits):
			return true
		case len(digits) >= 13 && len(digits) <= 19 && luhn(digits):
			return true
		}
		i = end
	}
	return false
}

// scanGroups collects the digits of a run starting at i, across single
// separators that are followed by a group of at least three digits.
func scanGroups(s string, i int, digits []byte) ([]byte, int) {
	for {
		for i < len(s) && isDigit(s[i]) {
			if len(digits) < cap(digits) {
				digits = append(digits, s[i])
			} else {
				digits = append(digits[:cap(digits)-1], 'x') // too long for either shape
			}
			i++
		}
		if i >= len(s) || (s[i] != ' ' && s[i] != '-') {
			return digits, i
		}
		g := i + 1
		for g < len(s) && isDigit(s[g]) {
			g++
		}
		if g-(i+1) < 3 {
			return digits, i
		}
		i++
	}
}

// numberSecret reports a JSON integer literal that is a card or ID number.
func numberSecret(lit []byte) bool {
	if len(lit) < 13 || len(lit) > 19 {
		return false
	}
	for _, c := range lit {
		if !isDigit(c) {
			return false
		}
	}
	return len(lit) == 18 && validID(lit) || luhn(lit)
}

func luhn(d []byte) bool {
	sum := 0
	for i := range d {
		c := d[len(d)-1-i]
		if !isDigit(c) {
			return false
		}
		v := int(c - '0')
		if i%2 == 1 {
			if v *= 2; v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// validID checks the GB 11643 check character of an 18-character ID.
func validID(d []byte) bool {
	if len(d) != 18 {
		return false
	}
	weights := [17]int{7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2}
	sum := 0
	for i, w := range weights {
		if !isDigit(d[i]) {
			return false
		}
		sum += int(d[i]-'0') * w
	}
	check := "10X98765432"[sum%11]
	return d[17] == check || check == 'X' && d[17] == 'x'
}

func isAlnum(c byte) bool { return isDigit(c) || isLetter(c) }
