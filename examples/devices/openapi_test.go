package devices_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/july/template/adapters/http/apitest"
)

// The shared contract document still loads and validates with this
// domain's paths and schemas in it.
func TestOpenAPIDocumentsTheRoutes(t *testing.T) {
	t.Parallel()
	doc := apitest.OpenAPI(t).Doc

	for path, method := range map[string]string{
		"/api/v1/device-assignments":                    "POST",
		"/api/v1/device-assignments/{task_id}":          "GET",
		"/api/v1/device-assignments/{task_id}/failures": "GET",
		"/api/v1/device-assignments/{task_id}/cancel":   "POST",
	} {
		item := doc.Paths.Find(path)
		require.NotNil(t, item, "path %s is not documented", path)
		require.NotNil(t, item.GetOperation(method), "%s %s is not documented", method, path)
	}
	// TestRetriedUploadWithNewBoundaryReturnsTheSameTask proves it: a
	// frontend may retry a lost upload by sending the file again.
	require.Contains(t, doc.Paths.Find("/api/v1/device-assignments").Post.Description, "even when the\nretry is a new multipart body",
		"the upload documents that a retry with a new boundary replays")
	for _, name := range []string{"DeviceAssignmentTask", "DeviceAssignmentCreated", "DeviceAssignmentFailurePage", "DeviceAssignmentUpload"} {
		require.Contains(t, doc.Components.Schemas, name)
	}
}
