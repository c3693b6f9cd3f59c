package taskhttp

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/july/template/adapters/http/httpx"
)

// Paging bounds for failure-detail listings.
const (
	// DefaultPageSize is the page_size when the parameter is absent.
	DefaultPageSize = 50
	// MaxPageSize is the largest page_size accepted.
	MaxPageSize = 200
	// MaxPage is the largest page accepted; deeper offsets are refused
	// rather than scanned.
	MaxPage = 100_000
)

// CodePageInvalid is the stable error code of a malformed or out-of-range
// page or page_size.
const CodePageInvalid = "PAGE_INVALID"

// PageRequest is a parsed ?page=&page_size= pair; Page is 1-based.
type PageRequest struct {
	Page     int
	PageSize int
}

// Offset returns how many items precede the page, for SQL OFFSET.
func (p PageRequest) Offset() int { return (p.Page - 1) * p.PageSize }

// Limit returns the page size, for SQL LIMIT.
func (p PageRequest) Limit() int { return p.PageSize }

// ParsePage reads ?page= (default 1, at most MaxPage) and ?page_size=
// (default DefaultPageSize, 1..MaxPageSize). A present but non-integer or
// out-of-range value is a 400 *httpx.Error with code CodePageInvalid and a
// detail naming the field.
func ParsePage(c echo.Context) (PageRequest, error) {
	page, err := pageParam(c, "page", 1, MaxPage, "page 须为 1 到 100000 的整数")
	if err != nil {
		return PageRequest{}, err
	}
	size, err := pageParam(c, "page_size", DefaultPageSize, MaxPageSize, "page_size 须为 1 到 200 的整数")
	if err != nil {
		return PageRequest{}, err
	}
	return PageRequest{Page: page, PageSize: size}, nil
}

func pageParam(c echo.Context, name string, def, maxVal int, reason string) (int, error) {
	raw := c.QueryParam(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxVal {
		return 0, httpx.BadRequest(CodePageInvalid, "分页参数无效：请按说明修正 page 或 page_size 后重试").
			WithDetails(httpx.Detail{Field: name, Reason: reason})
	}
	return n, nil
}

// Page is the JSON shape of every paged listing. Items is never null.
type Page[T any] struct {
	Items    []T   `json:"items"`
	Page     int   `json:"page"`
	PageSize int   `json:"page_size"`
	Total    int64 `json:"total"`
}

// RenderPage writes items (one page, already limited by p) and the total
// number of matching items as a Page with status 200.
func RenderPage[T any](c echo.Context, p PageRequest, items []T, total int64) error {
	if items == nil {
		items = []T{}
	}
	return c.JSON(http.StatusOK, Page[T]{Items: items, Page: p.Page, PageSize: p.PageSize, Total: total})
}
