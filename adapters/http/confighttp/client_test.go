package confighttp_test

import "net/http"

// testClient has a transport of its own: httptest.Server.Close closes the
// idle connections of http.DefaultTransport, which would break a parallel
// test's request on a connection it is about to reuse.
var testClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
