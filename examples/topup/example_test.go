package topup_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/july/template/examples/topup"
)

// The payment link is signed per order; only its shape is shown here,
// since the link itself is private.
func ExamplePayLinks_URL() {
	links, err := topup.NewPayLinks(topup.DefaultPayBaseURL, []byte("example-key-0123456789abcdef0123456789"))
	if err != nil {
		panic(err)
	}
	link := links.URL("3f1c0b1e-0000-4000-8000-000000000001")
	base, query, _ := strings.Cut(link, "?")
	fmt.Println(base)
	fmt.Println(strings.HasPrefix(query, "order=3f1c0b1e-0000-4000-8000-000000000001&sign="), len(query))
	fmt.Println(link == links.URL("3f1c0b1e-0000-4000-8000-000000000001"))
	// Output:
	// https://pay.example.com/pay
	// true 112
	// true
}

// MapError renders the domain's errors in the standard envelope.
func ExampleMapError() {
	for _, err := range []error{
		&topup.ValidationError{Code: topup.CodeChannelInvalid, Field: "channel", Reason: "须为 wechat 或 alipay"},
		fmt.Errorf("read order: %w", topup.ErrNotFound),
		errors.New("something else"),
	} {
		e, ok := topup.MapError(err)
		if !ok {
			fmt.Println("not mapped")
			continue
		}
		fmt.Println(e.Status, e.Code)
	}
	// Output:
	// 422 TOPUP_CHANNEL_INVALID
	// 404 TOPUP_NOT_FOUND
	// not mapped
}
