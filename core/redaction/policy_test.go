package redaction_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/redaction"
)

// plant marks every planted secret; it must never reach any output.
const plant = "PLANTED"

var allPolicies = []redaction.Policy{
	redaction.PolicyDefault, redaction.PolicyLogin, redaction.PolicyPayment,
	redaction.PolicyCallback, redaction.PolicyFileTransfer, redaction.PolicyOpaque,
}

// loggable renders everything an access log would write for res.
func loggable(t *testing.T, res redaction.Result) string {
	t.Helper()

	sum, err := json.Marshal(res.Summary)
	require.NoError(t, err)
	return res.Text + "\n" + string(sum)
}

func TestSummarise(t *testing.T) {
	t.Parallel()

	const (
		jsonCT = "application/json; charset=utf-8"
		formCT = "application/x-www-form-urlencoded"
		xmlCT  = "application/xml"
	)
	tests := []struct {
		name   string
		policy redaction.Policy
		body   redaction.Body
		mode   redaction.Mode
		text   string // exact Text, when set
		keep   []string
		fields []string // Summary.Fields, when set
		event  string
	}{
		{
			name: "LoginRequestJSON", policy: redaction.PolicyLogin, mode: redaction.ModeJSON,
			body: redaction.Body{ContentType: jsonCT, Data: []byte(`{"username":"alice","password":"PLANTED1","captcha":"PLANTED2","code":"PLANTED3"}`)},
			text: `{"username":"alice","password":"[REDACTED]","captcha":"[REDACTED]","code":"[REDACTED]"}`,
		},
		{
			name: "LoginResponseJSON", policy: redaction.PolicyLogin, mode: redaction.ModeJSON,
			body: redaction.Body{ContentType: jsonCT, Data: []byte(`{"ok":true,"data":{"user_id":42,"accessToken":"PLANTED1","refresh_token":"PLANTED2","session":"PLANTED3","id_token":"PLANTED4","expires_in":7200}}`)},
			keep: []string{`"ok":true`, `"user_id":42`, `"expires_in":7200`},
		},
		{
			name: "LoginForm", policy: redaction.PolicyLogin, mode: redaction.ModeForm,
			body: redaction.Body{ContentType: formCT, Data: []byte("username=alice&password=PLANTED&otp=PLANTED&state=PLANTED")},
			text: "username=alice&password=[REDACTED]&otp=[REDACTED]&state=[REDACTED]",
		},
		{
			name: "LoginXMLIsSummaryOnly", policy: redaction.PolicyLogin, mode: redaction.ModeSummary,
			body:   redaction.Body{ContentType: xmlCT, AllowText: true, Data: []byte(`<login><username>alice</username><password>PLANTED</password></login>`)},
			fields: []string{"password", "username"},
		},
		{
			name: "PaymentJSON", policy: redaction.PolicyPayment, mode: redaction.ModeJSON,
			body: redaction.Body{ContentType: jsonCT, Data: []byte(`{"order_no":"O-1","channel":"wechat","result_code":"SUCCESS","amount":1999,` +
				`"pay_url":"PLANTED","qr_code":"PLANTED","code_url":"weixin://PLANTED","card":{"number":"PLANTED","cvv":"PLANTED"},` +
				`"channel_key":"PLANTED","sign":"PLANTED","package":"prepay_id=PLANTED","redirect":"https://pay.example/h5?prepay_id=PLANTED"}`)},
			keep: []string{`"order_no":"O-1"`, `"channel":"wechat"`, `"result_code":"SUCCESS"`, `"amount":1999`},
		},
		{
			name: "CallbackJSONIsSummaryWithEvent", policy: redaction.PolicyCallback, mode: redaction.ModeSummary,
			body:   redaction.Body{ContentType: jsonCT, Data: []byte(`{"MsgType":"event","Event":"change_contact","nonce":"PLANTED","mobile":"PLANTED"}`)},
			fields: []string{"Event", "MsgType", "mobile", "nonce"},
			event:  "change_contact",
		},
		{
			name: "CallbackEncryptedXML", policy: redaction.PolicyCallback, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "text/xml", Data: []byte(`<xml><ToUserName><![CDATA[ww1]]></ToUserName>` +
				`<Encrypt><![CDATA[PLANTED]]></Encrypt><MsgType>event</MsgType></xml>`)},
			fields: []string{"Encrypt", "MsgType", "ToUserName"},
			event:  "event",
		},
		{
			name: "CallbackEventTypeMustBeIdentifier", policy: redaction.PolicyCallback, mode: redaction.ModeSummary,
			body:   redaction.Body{ContentType: jsonCT, Data: []byte(`{"event_type":"PLANTED secret text"}`)},
			fields: []string{"event_type"},
		},
		{
			name: "FileUploadMultipart", policy: redaction.PolicyFileTransfer, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "multipart/form-data; boundary=xyz", Data: []byte("--xyz\r\nPLANTED bytes\r\n--xyz--"),
				Parts: []redaction.PartInfo{
					{FieldName: "file", FileName: `C:\Users\alice\PLANTED-salary.CSV`, ContentType: "text/csv", Size: 1234},
					{FieldName: "note", Size: 3},
				}},
			fields: []string{"file", "note"},
		},
		{
			name: "FileDownloadJSON", policy: redaction.PolicyFileTransfer, mode: redaction.ModeJSON,
			body: redaction.Body{ContentType: jsonCT, Data: []byte(`{"task_id":"t-1","status":3,"download_url":"https://s3.example/f?X-Amz-Signature=PLANTED",` +
				`"url":"https://cdn.example/PLANTED","content":"PLANTED"}`)},
			text: `{"task_id":"t-1","status":3,"download_url":"[REDACTED]","url":"[REDACTED]","content":"[REDACTED]"}`,
		},
		{
			name: "FileDownloadBinary", policy: redaction.PolicyFileTransfer, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "application/octet-stream", Data: []byte("PLANTED\x00\x01\xff")},
		},
		{
			name: "OpaqueJSON", policy: redaction.PolicyOpaque, mode: redaction.ModeSummary,
			body:   redaction.Body{ContentType: jsonCT, Data: []byte(`{"b":"PLANTED","a":1}`)},
			fields: []string{"a", "b"},
		},
		{
			name: "DefaultBinary", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "image/png", Data: []byte("\x89PNG PLANTED")},
		},
		{
			name: "DefaultTextNotAllowed", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "text/plain", Data: []byte("hello PLANTED")},
		},
		{
			name: "DefaultTextAllowed", policy: redaction.PolicyDefault, mode: redaction.ModeText,
			body: redaction.Body{ContentType: "text/plain", AllowText: true, Data: []byte("pong")},
			text: "pong",
		},
		{
			name: "DefaultTextAllowedButHoldsKey", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "text/plain", AllowText: true, Data: []byte("user=a&password=PLANTED")},
		},
		{
			name: "DefaultXMLAllowedButHoldsKey", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body:   redaction.Body{ContentType: xmlCT, AllowText: true, Data: []byte(`<a><Token>PLANTED</Token></a>`)},
			fields: []string{"Token"},
		},
		{
			name: "DefaultTextAllowedButHoldsJWT", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "text/plain", AllowText: true, Data: []byte("got " + jwt + " PLANTED")},
		},
		{
			name: "DefaultTextAllowedInvalidUTF8", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: "text/plain", AllowText: true, Data: []byte("PLANTED\xff")},
		},
		{
			name: "DefaultFormUnparsable", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body: redaction.Body{ContentType: formCT, Data: []byte("a=1;password=PLANTED%zz")},
		},
		{
			name: "MissingContentType", policy: redaction.PolicyDefault, mode: redaction.ModeSummary,
			body: redaction.Body{Data: []byte(`{"x":"PLANTED"}`)},
		},
		{
			name: "Empty", policy: redaction.PolicyLogin, mode: redaction.ModeOmitted,
			body: redaction.Body{ContentType: jsonCT},
		},
	}
	r := redaction.Redactor{HashKey: []byte("test-key")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			res := r.Summarise(tt.policy, tt.body)
			out := loggable(t, res)
			require.Equal(t, tt.mode, res.Mode, "policy %s body %q: %s", tt.policy, tt.body.Data, out)
			require.NotContains(t, out, plant, "policy %s body %q", tt.policy, tt.body.Data)
			if tt.text != "" {
				require.Equal(t, tt.text, res.Text, "body %q", tt.body.Data)
			}
			for _, k := range tt.keep {
				require.Contains(t, res.Text, k, "body %q", tt.body.Data)
			}
			if tt.mode == redaction.ModeSummary {
				require.Empty(t, res.Text)
				require.NotNil(t, res.Summary)
				require.Len(t, res.Summary.HMAC, 16)
				require.Equal(t, tt.fields, res.Summary.Fields, "body %q", tt.body.Data)
				require.Equal(t, tt.event, res.Summary.EventType, "body %q", tt.body.Data)
			}
		})
	}
}

func TestSummariseUnparsableNeverRaw(t *testing.T) {
	t.Parallel()

	bodies := []redaction.Body{
		{ContentType: "application/json", Data: []byte(`{"password":"PLANTED",`)},
		{ContentType: "application/json", Data: []byte("PLANTED")},
		{ContentType: "application/json", Data: []byte("\xff\xfePLANTED")},
		{ContentType: "application/problem+json", Data: []byte(`{"token":PLANTED}`)},
		{ContentType: "application/json", Data: []byte(`{"ok":1,"password":"PLANTED"}`)[:20], Truncated: true},
		{ContentType: "application/x-www-form-urlencoded", Data: []byte("password=PLANTED%")},
		{ContentType: "application/xml", Data: []byte("<password>PLANTED</pass")},
	}
	for _, p := range allPolicies {
		for i, b := range bodies {
			t.Run(fmt.Sprintf("%s/%d", p, i), func(t *testing.T) {
				t.Parallel()

				var r redaction.Redactor
				res := r.Summarise(p, b)
				require.Equal(t, redaction.ModeSummary, res.Mode, "policy %s body %q", p, b.Data)
				require.Empty(t, res.Text, "policy %s body %q", p, b.Data)
				require.True(t, res.Summary.ParseFailed, "policy %s body %q", p, b.Data)
				require.Equal(t, len(b.Data), res.Summary.Size)
				require.Equal(t, b.Truncated, res.Truncated)
				require.NotContains(t, loggable(t, res), plant, "policy %s body %q", p, b.Data)
			})
		}
	}
}

func TestSummariseParts(t *testing.T) {
	t.Parallel()

	var r redaction.Redactor
	res := r.Summarise(redaction.PolicyFileTransfer, redaction.Body{
		ContentType: "multipart/form-data; boundary=b",
		Parts: []redaction.PartInfo{
			{FieldName: "file", FileName: "/tmp/x/Report.2024.XLSX", ContentType: "application/vnd.ms-excel; x=1", Size: 10},
			{FieldName: "file", FileName: "no-extension", Size: 5},
			{FieldName: "file", FileName: "evil.sh;rm -rf", Size: 1},
		},
	})
	require.Equal(t, redaction.ModeSummary, res.Mode)
	require.Equal(t, []redaction.PartSummary{
		{FieldName: "file", FileName: "***.xlsx", ContentType: "application/vnd.ms-excel", Size: 10},
		{FieldName: "file", FileName: "***", Size: 5},
		{FieldName: "file", FileName: "***", Size: 1},
	}, res.Summary.Parts)
	require.Equal(t, 16, res.Summary.Size, "size of parts when no data was captured")
	require.Equal(t, 3, res.Summary.FieldCount)
	require.Equal(t, []string{"file"}, res.Summary.Fields)
	require.Empty(t, res.Summary.HMAC, "nothing captured, nothing hashed")
}

func TestSummaryHMACIsKeyed(t *testing.T) {
	t.Parallel()

	body := redaction.Body{ContentType: "application/octet-stream", Data: []byte("123456")}
	a := redaction.Redactor{HashKey: []byte("k1")}
	b := redaction.Redactor{HashKey: []byte("k2")}
	var unkeyed redaction.Redactor

	ha := a.Summarise(redaction.PolicyOpaque, body).Summary.HMAC
	require.Equal(t, ha, a.Summarise(redaction.PolicyOpaque, body).Summary.HMAC, "deterministic")
	require.NotEqual(t, ha, b.Summarise(redaction.PolicyOpaque, body).Summary.HMAC, "depends on the key")
	require.NotEqual(t, ha, unkeyed.Summarise(redaction.PolicyOpaque, body).Summary.HMAC)
}

func TestSummariseOversized(t *testing.T) {
	t.Parallel()

	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := range 4000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"名前":"東京都","token":"PLANTED-%d","pay_url":"https://p.example/PLANTED"}`, i, i)
	}
	b.WriteString(`]}`)
	data := []byte(b.String())
	require.Greater(t, len(data), 4*redaction.DefaultMaxBytes)

	for _, p := range []redaction.Policy{redaction.PolicyDefault, redaction.PolicyLogin, redaction.PolicyPayment, redaction.PolicyFileTransfer} {
		t.Run(p.String(), func(t *testing.T) {
			t.Parallel()

			var r redaction.Redactor
			res := r.Summarise(p, redaction.Body{ContentType: "application/json", Data: data})
			require.Equal(t, redaction.ModeJSON, res.Mode)
			require.True(t, res.Truncated)
			require.LessOrEqual(t, len(res.Text), redaction.DefaultMaxBytes)
			require.True(t, utf8.ValidString(res.Text))
			require.NotContains(t, res.Text, plant)
			if p == redaction.PolicyDefault {
				require.Contains(t, res.Text, `"名前":"東京都"`)
			} else { // default-deny: an undeclared member keeps only its shape
				require.Contains(t, res.Text, `"名前":"[REDACTED:string:3]"`)
			}
		})
	}
}

func TestPolicyString(t *testing.T) {
	t.Parallel()

	for p, want := range map[redaction.Policy]string{
		redaction.PolicyDefault: "default", redaction.PolicyLogin: "login", redaction.PolicyPayment: "payment",
		redaction.PolicyCallback: "callback", redaction.PolicyFileTransfer: "file_transfer",
		redaction.PolicyOpaque: "opaque", redaction.Policy(99): "unknown",
	} {
		require.Equal(t, want, p.String(), "Policy(%d)", int(p))
	}
}
