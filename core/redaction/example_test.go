package redaction_test

import (
	"fmt"

	"github.com/july/template/core/redaction"
)

func ExampleRedactor_RedactJSON() {
	var r redaction.Redactor
	res, err := r.RedactJSON([]byte(`{"user":"alice","PassWord":"hunter2","items":[{"apiKey":{"id":1}},{"n":1.50}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text)
	// Output: {"user":"alice","PassWord":"[REDACTED]","items":[{"apiKey":"[REDACTED]"},{"n":1.50}]}
}

func ExampleRedactor_Summarise() {
	r := redaction.Redactor{HashKey: []byte("per-deployment secret")}
	res := r.Summarise(redaction.PolicyLogin, redaction.Body{
		ContentType: "application/json",
		Data:        []byte(`{"username":"alice","password":"hunter2",`), // cut off: does not parse
	})
	fmt.Println(res.Mode, res.Text == "", res.Summary.ParseFailed, res.Summary.Size)
	// Output: summary true true 41
}

func ExampleRedactor_RedactQuery() {
	var r redaction.Redactor
	fmt.Println(r.RedactQuery("page=2&access_token=abc&X-Amz-Signature=f00"))
	// Output: page=2&access_token=[REDACTED]&X-Amz-Signature=[REDACTED]
}
