package accesslog

import (
	"cmp"
	"mime"
	"net/http"
	"slices"

	"github.com/july/template/core/redaction"
)

// parts lists a parsed multipart form as redaction.PartInfo: names, file
// names (masked later by the redactor), content types and sizes, never
// contents. Sorted, so the log line is stable.
func parts(r *http.Request) []redaction.PartInfo {
	var out []redaction.PartInfo
	for name, vs := range r.MultipartForm.Value {
		for _, v := range vs {
			out = append(out, redaction.PartInfo{FieldName: name, Size: len(v)})
		}
	}
	for name, fhs := range r.MultipartForm.File {
		for _, fh := range fhs {
			out = append(out, redaction.PartInfo{
				FieldName: name, FileName: fh.Filename,
				ContentType: fh.Header.Get("Content-Type"), Size: int(fh.Size),
			})
		}
	}
	slices.SortFunc(out, func(a, b redaction.PartInfo) int {
		return cmp.Or(cmp.Compare(a.FieldName, b.FieldName), cmp.Compare(a.Size, b.Size))
	})
	return out
}

// mediaType is the bare media type of a Content-Type header, or "".
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}
