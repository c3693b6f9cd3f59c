package topup

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
)

// DefaultPayBaseURL is the stand-in payment page of PayLinks.
const DefaultPayBaseURL = "https://pay.example.com/pay"

// minPayKeyLen is the shortest HMAC key NewPayLinks accepts.
const minPayKeyLen = 32

// PayLinks makes the private payment link of an order. It is a stand-in
// for a payment gateway (no network): the link is base?order=<id>&sign=<hmac>.
// The link lets whoever holds it pay the order, so it must never reach a
// log: the routes that return it use redaction.PolicyPayment, and the
// default sensitive-key registry removes "pay_url" and "sign" as well.
type PayLinks struct {
	base string
	key  []byte
}

// NewPayLinks returns PayLinks signing with key (at least 32 bytes) under
// base, e.g. DefaultPayBaseURL.
func NewPayLinks(base string, key []byte) (*PayLinks, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" {
		return nil, errors.New("topup: pay base url must be an absolute https url without a query")
	}
	if len(key) < minPayKeyLen {
		return nil, errors.New("topup: pay link key must be at least 32 bytes")
	}
	return &PayLinks{base: base, key: append([]byte(nil), key...)}, nil
}

// NewRandomPayLinks returns PayLinks under DefaultPayBaseURL with a random
// per-process key: enough for the example, where nothing verifies the
// signature. A real service takes the link from its gateway.
func NewRandomPayLinks() (*PayLinks, error) {
	return NewPayLinks(DefaultPayBaseURL, []byte(rand.Text()+rand.Text()))
}

// URL returns the payment link of order id.
func (p *PayLinks) URL(orderID string) string {
	m := hmac.New(sha256.New, p.key)
	m.Write([]byte(orderID))
	q := url.Values{"order": {orderID}, "sign": {hex.EncodeToString(m.Sum(nil))}}
	return p.base + "?" + q.Encode()
}
