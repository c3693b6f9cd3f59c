package devices

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// CSV header columns, in order.
const (
	ColumnDeviceSN = "device_sn"
	ColumnTargetID = "target_agent_id"
)

// Row failure codes, stored with each failure detail.
const (
	CodeSNEmpty       = "DEVICE_SN_EMPTY"
	CodeSNMalformed   = "DEVICE_SN_MALFORMED"
	CodeSNDuplicate   = "DEVICE_SN_DUPLICATE"
	CodeTargetMissing = "DEVICE_TARGET_MISSING"
	CodeTargetInvalid = "DEVICE_TARGET_INVALID"
	CodeRowColumns    = "DEVICE_ROW_COLUMNS"
	// CodeTargetForbidden is a row of an agent's upload (RoleAgent
	// without RoleAdmin) naming another agent as target_agent_id.
	CodeTargetForbidden = "DEVICE_TARGET_FORBIDDEN"
	// CodeOwnedByOther is a row of an agent's upload for a device that
	// another agent holds; only RoleAdmin reassigns.
	CodeOwnedByOther = "DEVICE_OWNED_BY_OTHER"
)

// rowMessages are the user-visible Chinese explanations of the row codes.
var rowMessages = map[string]string{
	CodeSNEmpty:         "设备序列号为空：请填写 device_sn。",
	CodeSNMalformed:     "设备序列号格式不正确：须为 8-32 位大写字母或数字。",
	CodeSNDuplicate:     "设备序列号在文件中重复出现：只处理第一次出现的行，请删除重复行。",
	CodeTargetMissing:   "未填写目标代理商：请填写 target_agent_id。",
	CodeTargetInvalid:   "目标代理商 ID 格式不正确：须为 1-64 位字母、数字、下划线或连字符。",
	CodeRowColumns:      "该行列数不正确：每行须恰好两列 device_sn,target_agent_id。",
	CodeTargetForbidden: "只能把设备分配给自己：target_agent_id 须为当前账号；分配给其他代理商需要设备管理员（devices.admin）角色。",
	CodeOwnedByOther:    "设备已分配给其他代理商：代理商不能改派他人的设备，请联系设备管理员（devices.admin）处理。",
}

var (
	snPattern     = regexp.MustCompile(`^[A-Z0-9]{8,32}$`)
	targetPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// errUnparsable means the file as a whole cannot be read as the template:
// not UTF-8 text, not CSV, or a different header. The task fails; no row
// is decided.
var errUnparsable = errors.New("device csv unparsable")

// errNoRows means the file has the header but no data row.
var errNoRows = errors.New("device csv has no data rows")

// maxStoredSN bounds the serial kept with a failure (the column is 64).
const maxStoredSN = 64

// row is one data row and its decision. A row with Code == "" is valid
// and is applied; any other row is a failure with that code.
type row struct {
	// No is the file line the row starts on (the header is line 1), which
	// is what a user sees in a spreadsheet.
	No       int
	DeviceSN string
	TargetID string
	Code     string
}

// parseRows reads an uploaded CSV and decides every row. The decision
// depends only on the file, so a resumed worker reaches the same decisions
// for the same rows: a serial seen earlier in the file (on a row whose
// serial was well formed) makes every later row with it a duplicate.
func parseRows(data []byte) ([]row, error) {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return nil, fmt.Errorf("%w: not UTF-8 text", errUnparsable)
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(data, []byte("\uFEFF"))))
	r.FieldsPerRecord = -1 // a short or long row is a row failure, not a file failure
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", errUnparsable, err)
	}
	if len(header) != 2 || norm(header[0]) != ColumnDeviceSN || norm(header[1]) != ColumnTargetID {
		return nil, fmt.Errorf("%w: header is not %s,%s", errUnparsable, ColumnDeviceSN, ColumnTargetID)
	}
	var rows []row
	seen := map[string]bool{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUnparsable, err)
		}
		line, _ := r.FieldPos(0)
		rw := row{No: line, DeviceSN: strings.TrimSpace(rec[0])}
		if len(rec) > 1 {
			rw.TargetID = strings.TrimSpace(rec[1])
		}
		rw.Code = decide(rec, rw, seen)
		rows = append(rows, rw)
	}
	if len(rows) == 0 {
		return nil, errNoRows
	}
	return rows, nil
}

// decide returns the row's failure code, or "" for a valid row, and marks
// a well-formed serial as seen.
func decide(rec []string, rw row, seen map[string]bool) string {
	switch {
	case rw.DeviceSN == "":
		return CodeSNEmpty
	case !snPattern.MatchString(rw.DeviceSN):
		return CodeSNMalformed
	case seen[rw.DeviceSN]:
		return CodeSNDuplicate
	}
	seen[rw.DeviceSN] = true
	switch {
	case hasExtra(rec):
		return CodeRowColumns
	case rw.TargetID == "":
		return CodeTargetMissing
	case !targetPattern.MatchString(rw.TargetID):
		return CodeTargetInvalid
	}
	return ""
}

// hasExtra reports a non-empty third or later column; empty trailing
// columns (a spreadsheet's trailing commas) are tolerated.
func hasExtra(rec []string) bool {
	for _, f := range rec[min(len(rec), 2):] {
		if strings.TrimSpace(f) != "" {
			return true
		}
	}
	return false
}

func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// storedSN cuts a (possibly malformed) serial to the failure column's size
// on a rune boundary.
func storedSN(sn string) string {
	// A failed row's serial is shown in the failures listing, which users
	// export to spreadsheets: a value a spreadsheet would run as a formula
	// (= + - @, or a leading tab or CR) is kept with a leading ' (OWASP
	// CSV injection), which the spreadsheet shows as text.
	if sn != "" && strings.IndexByte("=+-@\t\r", sn[0]) >= 0 {
		sn = "'" + sn
	}
	if len(sn) <= maxStoredSN {
		return sn
	}
	cut := maxStoredSN
	for cut > 0 && !utf8.RuneStart(sn[cut]) {
		cut--
	}
	return sn[:cut]
}
