package sysconfig_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/sysconfig"
)

func TestPlanUpdateRejections(t *testing.T) {
	t.Parallel()
	reg := testRegistry()
	row := func(key, value string, version int64) *sysconfig.Stored {
		return &sysconfig.Stored{Key: key, Value: value, Type: sysconfig.TypeInt, Module: "pay", Version: version}
	}
	tests := []struct {
		name         string
		req          sysconfig.UpdateRequest
		current      *sysconfig.Stored
		wantCode     string
		wantIs       error
		wantVersion  int64
		wantOld      string
		wantNewValue string
	}{
		{"not registered", sysconfig.UpdateRequest{Key: "pay.order.unknown", Raw: json.RawMessage(`5`)}, nil,
			sysconfig.CodeKeyNotRegistered, sysconfig.ErrKeyNotRegistered, 0, "", ""},
		{"not registered with row is masked", sysconfig.UpdateRequest{Key: "pay.order.unknown", Raw: json.RawMessage(`5`)}, row("pay.order.unknown", secret, 2),
			sysconfig.CodeKeyNotRegistered, sysconfig.ErrKeyNotRegistered, 2, sysconfig.Mask, ""},
		{"read-only spec", sysconfig.UpdateRequest{Key: "pay.wechat.app_id", Raw: json.RawMessage(`"wx2"`)}, nil,
			sysconfig.CodeReadOnly, sysconfig.ErrReadOnly, 0, "", "wx2"},
		{"read-only row", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`5`)},
			&sysconfig.Stored{Key: "pay.order.limit", Value: "10", Type: sysconfig.TypeInt, ReadOnly: true, Version: 4},
			sysconfig.CodeReadOnly, sysconfig.ErrReadOnly, 4, "10", "5"},
		{"wrong type", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`"5"`)}, row("pay.order.limit", "10", 1),
			sysconfig.CodeValueInvalid, nil, 1, "10", ""},
		{"fraction", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`1.5`)}, nil,
			sysconfig.CodeValueInvalid, nil, 0, "", ""},
		{"out of range", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`101`)}, row("pay.order.limit", "10", 1),
			sysconfig.CodeValueInvalid, nil, 1, "10", "101"},
		{"sensitive wrong type", sysconfig.UpdateRequest{Key: "pay.wechat.token", Raw: json.RawMessage(`true`)}, nil,
			sysconfig.CodeValueInvalid, nil, 0, "", ""},
		{"version conflict", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`5`), ExpectedVersion: i64(2)}, row("pay.order.limit", "10", 3),
			sysconfig.CodeVersionConflict, nil, 3, "10", "5"},
		{"version conflict without row", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`5`), ExpectedVersion: i64(1)}, nil,
			sysconfig.CodeVersionConflict, nil, 0, "", "5"},
		{"sensitive version conflict is masked", sysconfig.UpdateRequest{Key: "pay.wechat.token", Raw: json.RawMessage(`"` + secret + `"`), ExpectedVersion: i64(1)},
			&sysconfig.Stored{Key: "pay.wechat.token", Value: "old-" + secret, Type: sysconfig.TypeString, Version: 2},
			sysconfig.CodeVersionConflict, nil, 2, sysconfig.Mask, sysconfig.Mask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.req.Actor = "admin-1"
			_, err := sysconfig.PlanUpdate(reg, tt.req, tt.current)
			require.Error(t, err, "req %+v", tt.req)
			require.Equal(t, tt.wantCode, sysconfig.Code(err), "err %v", err)
			if tt.wantIs != nil {
				require.ErrorIs(t, err, tt.wantIs)
			}
			require.NotContains(t, err.Error(), secret)

			rec := sysconfig.RejectedDecision(reg, tt.req, tt.current, err)
			require.Equal(t, sysconfig.UpdateDecision{
				Key: tt.req.Key, Actor: "admin-1", Action: sysconfig.ActionUpdate,
				Outcome: sysconfig.OutcomeRejected, Code: tt.wantCode, Reason: sysconfig.Message(err),
				OldValue: tt.wantOld, NewValue: tt.wantNewValue, Version: tt.wantVersion,
			}, rec)
			require.NotEmpty(t, rec.Reason)
			require.NotContains(t, fmt.Sprintf("%+v", rec), secret)
		})
	}
}

func TestPlanUpdateAccepted(t *testing.T) {
	t.Parallel()
	reg := testRegistry()
	tests := []struct {
		name        string
		req         sysconfig.UpdateRequest
		current     *sysconfig.Stored
		wantText    string
		wantBase    int64
		wantOld     string
		wantNewMask string
	}{
		{"first write", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`100`)}, nil, "100", 0, "", "100"},
		{"first write expecting zero", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`1`), ExpectedVersion: i64(0)}, nil, "1", 0, "", "1"},
		{"matching version", sysconfig.UpdateRequest{Key: "pay.wechat.enabled", Raw: json.RawMessage(`true`), ExpectedVersion: i64(7)},
			&sysconfig.Stored{Key: "pay.wechat.enabled", Value: "false", Version: 7}, "true", 7, "false", "true"},
		{"no expected version", sysconfig.UpdateRequest{Key: "pay.order.limit", Raw: json.RawMessage(`50`)},
			&sysconfig.Stored{Key: "pay.order.limit", Value: "10", Version: 3}, "50", 3, "10", "50"},
		{"sensitive masked", sysconfig.UpdateRequest{Key: "pay.wechat.token", Raw: json.RawMessage(`"` + secret + `"`)},
			&sysconfig.Stored{Key: "pay.wechat.token", Value: "old-" + secret, Version: 1}, secret, 1, sysconfig.Mask, sysconfig.Mask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.req.Actor = "admin-1"
			p, err := sysconfig.PlanUpdate(reg, tt.req, tt.current)
			require.NoError(t, err, "req %+v", tt.req)
			require.Equal(t, tt.wantText, p.NewText)
			require.Equal(t, tt.wantBase, p.BaseVersion)
			require.Equal(t, tt.wantBase+1, p.NewVersion)
			require.Equal(t, tt.wantOld, p.OldMasked)
			require.Equal(t, tt.wantNewMask, p.NewMasked)
			require.Equal(t, sysconfig.UpdateDecision{
				Key: tt.req.Key, Actor: "admin-1", Action: "config.update", Outcome: "accepted",
				OldValue: tt.wantOld, NewValue: tt.wantNewMask, Version: tt.wantBase + 1,
			}, p.Decision)

			now := time.Date(2025, 7, 1, 8, 0, 0, 0, time.UTC)
			row := p.Row(now)
			require.Equal(t, tt.wantText, row.Value)
			require.Equal(t, p.Spec.Type, row.Type)
			require.Equal(t, "pay", row.Module)
			require.Equal(t, tt.wantBase+1, row.Version)
			require.Equal(t, "admin-1", row.UpdatedBy)
			require.Equal(t, now, row.UpdatedAt)
		})
	}
}

func TestRejectedDecisionUnknownError(t *testing.T) {
	t.Parallel()
	req := sysconfig.UpdateRequest{Key: "pay.wechat.token", Raw: json.RawMessage(`"` + secret + `"`), Actor: "a"}
	rec := sysconfig.RejectedDecision(testRegistry(), req, nil, errors.New("db down while writing "+secret))
	require.Equal(t, sysconfig.CodeUpdateFailed, rec.Code)
	require.Equal(t, sysconfig.OutcomeRejected, rec.Outcome)
	require.Equal(t, sysconfig.Mask, rec.NewValue)
	require.NotContains(t, fmt.Sprintf("%+v", rec), secret)

	rec = sysconfig.RejectedDecision(nil, req, nil, sysconfig.ErrKeyNotRegistered)
	require.Equal(t, sysconfig.CodeKeyNotRegistered, rec.Code)
	require.Empty(t, rec.NewValue)
}

func TestCodeAndMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err      error
		wantCode string
		wantMsg  string
	}{
		{nil, "", ""},
		{errors.New("other"), "", ""},
		{fmt.Errorf("x: %w", sysconfig.ErrKeyNotRegistered), sysconfig.CodeKeyNotRegistered, "配置项未注册，不能通过接口修改"},
		{fmt.Errorf("x: %w", sysconfig.ErrReadOnly), sysconfig.CodeReadOnly, "配置项为只读，不能通过接口修改"},
		{fmt.Errorf("x: %w", &sysconfig.ValueError{Key: "a.b.c", Reason: "值不能小于 1"}), sysconfig.CodeValueInvalid, "配置值不合法：值不能小于 1"},
		{&sysconfig.VersionConflictError{Key: "a.b.c", Expected: 1, Actual: 2}, sysconfig.CodeVersionConflict, "配置已被修改（当前版本 2），请刷新后基于最新版本重试"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.wantCode, sysconfig.Code(tt.err), "err %v", tt.err)
		require.Equal(t, tt.wantMsg, sysconfig.Message(tt.err), "err %v", tt.err)
	}
}
