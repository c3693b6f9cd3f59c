package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/july/template/adapters/http/auth"
)

func ExampleIssueToken() {
	secret := []byte("a-32-byte-or-longer-random-secret!")
	at := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	tok, err := auth.IssueToken(secret, "user-42", []string{auth.RoleSuperAdmin}, time.Hour, at)
	if err != nil {
		fmt.Println(err)
		return
	}
	j, err := auth.NewJWT(secret, 0, func() time.Time { return at.Add(time.Minute) })
	if err != nil {
		fmt.Println(err)
		return
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	p, err := j.Authenticate(context.Background(), r)
	fmt.Println(p.Subject, p.HasRole(auth.RoleSuperAdmin), err)
	// Output: user-42 true <nil>
}
