package httpx

import (
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// PathUUID returns the path parameter name when it is a UUID, else a 400
// REQUEST_INVALID whose detail names the parameter. Every id that reaches
// SQL goes through a check like this first: a NUL byte or an overlong value
// is the caller's mistake (400), never a driver error (500).
func PathUUID(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if uuid.Validate(v) != nil || len(v) != 36 {
		return "", BadRequest(CodeRequestInvalid, "路径参数 "+name+" 格式不正确：须为 UUID，例如 00000000-0000-4000-8000-000000000000").
			WithDetails(Detail{Field: name, Reason: "须为 36 个字符的 UUID"})
	}
	return v, nil
}
