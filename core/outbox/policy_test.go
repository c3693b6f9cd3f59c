package outbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/outbox"
)

func TestPolicyOnFailure(t *testing.T) {
	t.Parallel()

	p := outbox.Policy{MaxAttempts: 3, Backoff: outbox.Backoff{Base: time.Second, Max: time.Minute}}
	transient := outbox.Transient("QUEUE_UNAVAILABLE", "redis down")
	permanent := outbox.Permanent("PAYLOAD_REFUSED", "payload refused")

	tests := []struct {
		name       string
		policy     outbox.Policy
		retryCount int
		err        error
		want       outbox.FailureDecision
	}{
		{"FirstFailureRetries", p, 0, transient, outbox.FailureDecision{
			Status: outbox.Pending, NextAttemptAt: t0.Add(500 * time.Millisecond), RetryCount: 1,
			Code: "QUEUE_UNAVAILABLE", Message: "redis down", Class: outbox.ClassTransient,
		}},
		{"LastRetryBeforeMax", p, 1, transient, outbox.FailureDecision{ // attempt 2 of 3
			Status: outbox.Pending, NextAttemptAt: t0.Add(time.Second), RetryCount: 2,
			Code: "QUEUE_UNAVAILABLE", Message: "redis down", Class: outbox.ClassTransient,
		}},
		{"MaxAttemptsReached", p, 2, transient, outbox.FailureDecision{ // attempt 3 of 3
			Status: outbox.Failed, NextAttemptAt: t0, RetryCount: 3, Final: true,
			Code: "QUEUE_UNAVAILABLE", Message: "redis down", Class: outbox.ClassTransient,
		}},
		{"BeyondMax", p, 7, transient, outbox.FailureDecision{
			Status: outbox.Failed, NextAttemptAt: t0, RetryCount: 8, Final: true,
			Code: "QUEUE_UNAVAILABLE", Message: "redis down", Class: outbox.ClassTransient,
		}},
		{"PermanentFailsAtOnce", p, 0, permanent, outbox.FailureDecision{
			Status: outbox.Failed, NextAttemptAt: t0, RetryCount: 1, Final: true,
			Code: "PAYLOAD_REFUSED", Message: "payload refused", Class: outbox.ClassPermanent,
		}},
		{"UnknownErrorIsTransient", p, 0, errors.New("boom"), outbox.FailureDecision{
			Status: outbox.Pending, NextAttemptAt: t0.Add(500 * time.Millisecond), RetryCount: 1,
			Code: outbox.DefaultErrorCode, Message: "boom", Class: outbox.ClassTransient,
		}},
		{"NilErrStillCoded", p, 0, nil, outbox.FailureDecision{
			Status: outbox.Pending, NextAttemptAt: t0.Add(500 * time.Millisecond), RetryCount: 1,
			Code: outbox.DefaultErrorCode, Class: outbox.ClassTransient,
		}},
		{"NegativeRetryCount", p, -4, transient, outbox.FailureDecision{
			Status: outbox.Pending, NextAttemptAt: t0.Add(500 * time.Millisecond), RetryCount: 1,
			Code: "QUEUE_UNAVAILABLE", Message: "redis down", Class: outbox.ClassTransient,
		}},
		{"MaxAttemptsOneNeverRetries", outbox.Policy{MaxAttempts: 1}, 0, transient, outbox.FailureDecision{
			Status: outbox.Failed, NextAttemptAt: t0, RetryCount: 1, Final: true,
			Code: "QUEUE_UNAVAILABLE", Message: "redis down", Class: outbox.ClassTransient,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got := tt.policy.OnFailure(tt.retryCount, tt.err, t0, 0)
			require.Equal(t, tt.want, got, "retryCount %d err %v", tt.retryCount, tt.err)
		})
	}
}

func TestPolicyDefaultMaxAttempts(t *testing.T) {
	t.Parallel()

	var p outbox.Policy
	err := outbox.Transient("X", "x")
	require.False(t, p.OnFailure(outbox.DefaultMaxAttempts-2, err, t0, 0.5).Final, "attempt %d", outbox.DefaultMaxAttempts-1)
	d := p.OnFailure(outbox.DefaultMaxAttempts-1, err, t0, 0.5)
	require.True(t, d.Final, "attempt %d", outbox.DefaultMaxAttempts)
	require.Equal(t, outbox.Failed, d.Status)
}

func TestPolicyJitterWithinBackoff(t *testing.T) {
	t.Parallel()

	p := outbox.Policy{MaxAttempts: 100}
	for n := range 40 {
		for _, r := range []float64{0, 0.3, 0.999999} {
			d := p.OnFailure(n, outbox.Transient("X", "x"), t0, r)
			c := outbox.DefaultBackoff.Ceiling(n + 1)
			wait := d.NextAttemptAt.Sub(t0)
			require.GreaterOrEqual(t, wait, c-c/2, "retryCount %d rnd %v", n, r)
			require.LessOrEqual(t, wait, c, "retryCount %d rnd %v", n, r)
		}
	}
}

func TestPolicyOnLeaseExpired(t *testing.T) {
	t.Parallel()

	p := outbox.Policy{MaxAttempts: 3, Backoff: outbox.Backoff{Base: time.Second, Max: time.Minute}}
	lost := outbox.Transient(outbox.CodeLeaseExpired, outbox.LeaseExpiredMessage)
	for retryCount := -1; retryCount <= 4; retryCount++ {
		for _, rnd := range []float64{0, 0.5, 0.999999} {
			got := p.OnLeaseExpired(retryCount, t0, rnd)
			require.Equal(t, p.OnFailure(retryCount, lost, t0, rnd), got, "a lost lease is a transient failed attempt (retryCount %d)", retryCount)
			require.Equal(t, outbox.CodeLeaseExpired, got.Code)
			require.Equal(t, outbox.LeaseExpiredMessage, got.Message)
			require.Equal(t, outbox.ClassTransient, got.Class)
			require.Equal(t, got.RetryCount >= 3, got.Final, "retryCount %d: final exactly on the last attempt", retryCount)
		}
	}
	require.Equal(t, outbox.LeaseExpiredMessage, outbox.SafeMessage(outbox.LeaseExpiredMessage), "the message is stored as is")
}
