package tasks_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/core/tasks"
)

func TestNewSummary(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		code    string
		message string
		wantErr bool
	}{
		{"Chinese", "TASK_FILE_UNPARSABLE", "文件无法解析，请检查后重试。", false},
		{"WithNumbersAndTime", "ORDER_QUOTA_EXCEEDED", "第 12 行超出额度，请于 12:30 后重试。", false},
		{"EnglishWords", "TASK_X_1", "please select a file and retry", false},
		{"MaxLength", "TASK_LONG", strings.Repeat("错", tasks.MaxSummaryRunes), false},
		{"TrimmedSpaces", "TASK_TRIM", "  已取消  ", false},

		{"CodeLowercase", "task_failed", "失败", true},
		{"CodeTooShort", "TA", "失败", true},
		{"CodeLeadingDigit", "1TASK", "失败", true},
		{"CodeTooLong", "T" + strings.Repeat("A", 64), "失败", true},
		{"CodeHyphen", "TASK-FAILED", "失败", true},
		{"Empty", "TASK_EMPTY", "", true},
		{"Blank", "TASK_EMPTY", "   ", true},
		{"TooLong", "TASK_LONG", strings.Repeat("错", tasks.MaxSummaryRunes+1), true},
		{"InvalidUTF8", "TASK_BYTES", "失败\xff", true},
		{"Newline", "TASK_NL", "失败\n第二行", true},
		{"Tab", "TASK_TAB", "失败\t原因", true},
		{"Goroutine", "TASK_STACK", "goroutine 12 [running]", true},
		{"Panic", "TASK_STACK", "panic: runtime error", true},
		{"GoFileRef", "TASK_STACK", "失败 (worker.go:42)", true},
		{"SelectSQL", "TASK_SQL", "SELECT id FROM tb_task 失败", true},
		{"InsertSQL", "TASK_SQL", "INSERT INTO tb_task 失败", true},
		{"UpdateSQL", "TASK_SQL", "UPDATE tb_task SET status=3", true},
		{"PqError", "TASK_SQL", "pq: duplicate key value", true},
		{"SQLState", "TASK_SQL", "失败 (SQLSTATE 23505)", true},
		{"PgError", "TASK_SQL", "ERROR: relation does not exist", true},
		{"URL", "TASK_URL", "请访问 https://oss.example.com/x?sig=1", true},
		{"PostgresURL", "TASK_URL", "postgres://root@db/test 不可用", true},
		{"IP", "TASK_HOST", "10.0.3.7 不可用", true},
		{"IPPort", "TASK_HOST", "连接 10.0.3.7:5432 失败", true},
		{"HostPort", "TASK_HOST", "连接 redis.internal:6379 失败", true},
		{"LocalhostPort", "TASK_HOST", "dial localhost:5432 失败", true},
		{"IPv6Port", "TASK_HOST", "dial [::1]:5432 失败", true},
		{"UnixPath", "TASK_PATH", "打开 /var/lib/app/upload.csv 失败", true},
		{"WindowsPath", "TASK_PATH", "打开 C:\\data\\x.csv 失败", true},
		{"Password", "TASK_SECRET", "password=hunter2", true},
		{"Token", "TASK_SECRET", "token: abc", true},
		{"Bearer", "TASK_SECRET", "Bearer eyJhbGciOi", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := tasks.NewSummary(tt.code, tt.message)
			if !tt.wantErr {
				require.NoError(t, err, "NewSummary(%q, %q)", tt.code, tt.message)
				require.Equal(t, tasks.Summary{Code: tt.code, Message: strings.TrimSpace(tt.message)}, got)
				return
			}
			var se *tasks.SummaryError
			require.ErrorAs(t, err, &se, "NewSummary(%q, %q)", tt.code, tt.message)
			require.Equal(t, tt.code, se.Code)
			require.Zero(t, got, "NewSummary(%q, %q) returns no summary on error", tt.code, tt.message)
			if tt.message != "" && strings.TrimSpace(tt.message) != "" {
				require.NotContains(t, err.Error(), tt.message, "the error must not echo the message")
			}
		})
	}
}

func TestCatalogue(t *testing.T) {
	t.Parallel()

	codes := []string{
		tasks.CodeFileUnparsable, tasks.CodeSetupFailed, tasks.CodeInfraUnavailable,
		tasks.CodeLeaseExpired, tasks.CodeCancelled, tasks.CodeExecutionFailed,
	}
	cat := tasks.Catalogue()
	require.Len(t, cat, len(codes))

	seen := map[string]bool{}
	for _, s := range cat {
		require.NoError(t, s.Validate(), "catalogue entry %+v", s)
		require.False(t, seen[s.Code], "duplicate catalogue code %s", s.Code)
		seen[s.Code] = true
	}
	for _, code := range codes {
		got := tasks.SummaryFor(code)
		require.Equal(t, code, got.Code, "SummaryFor(%s)", code)
		require.NotEmpty(t, got.Message, "SummaryFor(%s)", code)
	}

	unknown := tasks.SummaryFor("SOMETHING_ELSE")
	require.Equal(t, tasks.CodeExecutionFailed, unknown.Code, "unknown codes fall back")
}
