package taskhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/taskhttp"
	"github.com/july/template/core/tasks"
)

// A task endpoint loads the business's task row, converts it to a
// tasks.Task and renders it; the client passes ?poll= to back off.
func ExampleRender() {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	task, _ := tasks.NewTask("exp-42", 10, now)

	e := echo.New()
	e.GET("/api/v1/exports/:id", func(c echo.Context) error {
		polls, err := taskhttp.PollsSoFar(c)
		if err != nil {
			return err // 400 POLL_INVALID
		}
		return taskhttp.Render(c, task, polls)
	})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/exports/exp-42?poll=1", nil))

	fmt.Println(rec.Code, rec.Header().Get("Retry-After"))
	fmt.Print(rec.Body.String())
	// Output:
	// 200 3
	// {"task_id":"exp-42","status":1,"status_name":"待处理","total_count":10,"success_count":0,"failed_count":0,"progress":0,"error_summary":null,"started_at":null,"finished_at":null,"updated_at":"2030-01-01T00:00:00Z"}
}
