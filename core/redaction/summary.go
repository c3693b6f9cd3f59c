package redaction

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Summary limits keep a summary small whatever the body holds.
const (
	maxSummaryFields = 64
	maxNameLen       = 64
)

// unkeyedHashKey is used when Redactor.HashKey is empty. It only separates
// this hash from others; it is public and so protects nothing.
var unkeyedHashKey = []byte("github.com/july/template/core/redaction: unkeyed body hash v1")

// Summary describes a body without any of its values: enough to correlate a
// log line with an audit record and to see the shape of what was sent.
type Summary struct {
	// ContentType is the bare media type, without parameters.
	ContentType string `json:"content_type,omitempty"`
	// Size is the captured body length in bytes (the sum of part sizes for a
	// multipart body described only by Parts).
	Size int `json:"size"`
	// Fields are the distinct top-level field names of a JSON object, form or
	// XML document, or the field names of multipart parts; sorted, at most
	// 64. Overlong or credential-like names are Redacted.
	Fields []string `json:"fields,omitempty"`
	// FieldCount counts all top-level fields (or parts), even beyond Fields' cap.
	FieldCount int `json:"field_count"`
	// EventType is a callback's event or message type, when it is a plain identifier.
	EventType string `json:"event_type,omitempty"`
	// HMAC is the first 16 hex digits of HMAC-SHA256(Redactor.HashKey, body).
	HMAC string `json:"hmac,omitempty"`
	// Truncated is true when the HTTP layer captured only a prefix of the body.
	Truncated bool `json:"truncated,omitempty"`
	// ParseFailed is true when the body claimed a format it does not parse as.
	ParseFailed bool `json:"parse_failed,omitempty"`
	// Parts summarise a multipart body, at most 64 of them.
	Parts []PartSummary `json:"parts,omitempty"`
}

// PartInfo is one multipart part as the HTTP layer parsed it.
type PartInfo struct {
	FieldName   string
	FileName    string
	ContentType string
	Size        int
}

// PartSummary is a PartInfo that is safe to log: the file name keeps only
// its extension.
type PartSummary struct {
	FieldName   string `json:"field_name,omitempty"`
	FileName    string `json:"file_name,omitempty"` // e.g. "***.csv"
	ContentType string `json:"content_type,omitempty"`
	Size        int    `json:"size"`
}

// summary builds the Result for a body that is not logged as text.
// ParseFailed is set when the body does not parse as its content type.
func (r *Redactor) summary(b Body, k kind, mediaType string) Result {
	s := &Summary{ContentType: mediaType, Size: len(b.Data), Truncated: b.Truncated}
	if len(b.Data) > 0 {
		mac := hmac.New(sha256.New, r.HashKey)
		if len(r.HashKey) == 0 {
			mac = hmac.New(sha256.New, unkeyedHashKey)
		}
		mac.Write(b.Data)
		s.HMAC = hex.EncodeToString(mac.Sum(nil))[:16]
	}
	var names []string
	switch {
	case len(b.Parts) > 0:
		names = s.addParts(b.Parts)
	case k == kindJSON:
		var ok bool
		names, s.EventType, ok = topLevel(b.Data)
		s.ParseFailed = !ok
	case k == kindForm:
		var ok bool
		names, ok = formNames(b.Data)
		s.ParseFailed = !ok
	case k == kindXML:
		var err error
		names, s.EventType, err = xmlTopLevel(b.Data)
		s.ParseFailed = err != nil
	}
	s.FieldCount = len(names)
	s.Fields = r.safeNames(names)
	if !isIdentifier(s.EventType) {
		s.EventType = ""
	}
	return Result{Summary: s, Truncated: b.Truncated, Mode: ModeSummary}
}

func (s *Summary) addParts(parts []PartInfo) (names []string) {
	total := 0
	for i, p := range parts {
		names = append(names, p.FieldName)
		total += p.Size
		if i >= maxSummaryFields {
			continue
		}
		_, mt := classify(p.ContentType)
		s.Parts = append(s.Parts, PartSummary{
			FieldName: safeName(p.FieldName), FileName: maskFileName(p.FileName), ContentType: mt, Size: p.Size,
		})
	}
	if s.Size == 0 {
		s.Size = total // the parts were streamed, not captured
	}
	return names
}

// formNames returns the keys of a form body and whether it parses.
func formNames(data []byte) ([]string, bool) {
	if !utf8.Valid(data) {
		return nil, false
	}
	q, err := url.ParseQuery(string(data))
	if err != nil {
		return nil, false
	}
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	return names, true
}

// safeNames sorts, dedupes and caps field names, hiding any name that is
// long or looks like a credential (a map keyed by tokens, say).
func (r *Redactor) safeNames(names []string) []string {
	out := make([]string, 0, min(len(names), maxSummaryFields))
	for _, n := range names {
		out = append(out, safeName(n))
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxSummaryFields {
		out = out[:maxSummaryFields]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// safeName hides a field name that is long or looks like a credential
// (a multipart part or a map keyed by tokens, say).
func safeName(n string) string {
	if len(n) > maxNameLen || !utf8.ValidString(n) || defaultRegistry.matcher(PolicyDefault).secretValue(n) ||
		nameFlags([]byte(n))&flagIdentKey != 0 {
		return Redacted
	}
	return n
}

// maskFileName keeps only a short alphanumeric extension: "a/b/report.csv"
// becomes "***.csv". Names can carry personal data; extensions rarely do.
func maskFileName(name string) string {
	if name == "" {
		return ""
	}
	base := name[strings.LastIndexAny(name, `/\`)+1:]
	dot := strings.LastIndexByte(base, '.')
	if dot < 0 || len(base)-dot > 10 || !isIdentifier(base[dot+1:]) {
		return "***"
	}
	return "***" + strings.ToLower(base[dot:])
}

// isIdentifier reports a non-empty, short name of [A-Za-z0-9_.:-].
func isIdentifier(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isBase64URL(c) && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

// xmlTopLevel returns the names of the root element's children and the text
// of its Event (or MsgType) child, as in a WeCom callback.
func xmlTopLevel(data []byte) (names []string, event string, err error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	depth, rank, current := 0, 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			if depth != 0 {
				return names, event, io.ErrUnexpectedEOF
			}
			return names, event, nil
		}
		if err != nil {
			return names, event, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			current = 0
			if depth == 2 {
				names = append(names, t.Name.Local)
				current = eventRank(t.Name.Local)
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 2 && current > rank {
				event, rank = strings.TrimSpace(string(t)), current
			}
		}
	}
}
