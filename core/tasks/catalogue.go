package tasks

// Stable failure codes shared by every task type. Businesses may add their
// own codes with NewSummary; these cover the cases the contract names.
const (
	// CodeFileUnparsable: the uploaded file could not be parsed at all.
	CodeFileUnparsable = "TASK_FILE_UNPARSABLE"
	// CodeSetupFailed: the task could not be set up (bad or missing input).
	CodeSetupFailed = "TASK_SETUP_FAILED"
	// CodeInfraUnavailable: a key dependency kept failing.
	CodeInfraUnavailable = "TASK_INFRA_UNAVAILABLE"
	// CodeLeaseExpired: the task kept timing out and was given up.
	CodeLeaseExpired = "TASK_LEASE_EXPIRED"
	// CodeCancelled: the task was cancelled on request.
	CodeCancelled = "TASK_CANCELLED"
	// CodeExecutionFailed: the task failed as a whole for another reason. It
	// is also the fallback of SummaryFor for unknown codes.
	CodeExecutionFailed = "TASK_EXECUTION_FAILED"
)

// Catalogue returns the built-in summaries, one per Code constant.
func Catalogue() []Summary {
	return []Summary{
		{CodeFileUnparsable, "文件无法解析，请检查文件格式是否与模板一致后重新提交。"},
		{CodeSetupFailed, "任务无法建立，请检查提交的内容后重新创建任务。"},
		{CodeInfraUnavailable, "依赖服务暂时不可用，任务未能完成，请稍后重新提交。"},
		{CodeLeaseExpired, "任务多次执行超时未能完成，请稍后重新提交或联系管理员。"},
		{CodeCancelled, "任务已取消，未处理的数据不会继续处理。"},
		{CodeExecutionFailed, "任务执行失败，请稍后重试；如仍失败请联系管理员。"},
	}
}

// SummaryFor returns the catalogue summary for code. An unknown code yields
// the CodeExecutionFailed summary, so a failure always has a safe message.
func SummaryFor(code string) Summary {
	var fallback Summary
	for _, s := range Catalogue() {
		if s.Code == code {
			return s
		}
		if s.Code == CodeExecutionFailed {
			fallback = s
		}
	}
	return fallback
}
