package redaction

// Fields is a route's declared safe set on a default-deny policy (login,
// payment, callback, file transfer): the members, form fields and query
// parameters whose values the access log may keep. Every other value
// becomes its shape ("[REDACTED:string:11]"). Build it once per route.
type Fields struct {
	m map[string]uint8
}

const (
	fieldSafe uint8 = 1 + iota // the value is logged
	fieldHash                  // the value is logged as its shape and keyed hash
)

// NewFields declares safe the values of the fields named in safe, and
// correlate's as a shape with a keyed hash of the value (Redactor.HashKey
// must be set; without it only the shape is logged). Names match as the
// Registry matches them: agentId, agent_id and Agent-ID are one name. A
// name the rule table holds sensitive (a card number, a pay URL) stays
// redacted whatever the declaration says.
func NewFields(safe, correlate []string) *Fields {
	f := &Fields{m: make(map[string]uint8, len(safe)+len(correlate))}
	for _, n := range safe {
		f.m[normalise(n)] = fieldSafe
	}
	for _, n := range correlate {
		f.m[normalise(n)] = fieldHash
	}
	return f
}

// builtinSafe are the troubleshooting fields every default-deny policy
// keeps: the outcome, the error envelope and the request id. "code" is
// kept only when it reads as a result code (UPPER_SNAKE), never as an SMS
// or OAuth code; the policies add their own (denyPolicies).
var builtinSafe = []string{
	"request_id", "status", "result", "result_code", "error_code", "errcode", "err_code", "return_code",
	"ok", "success", "succeeded", "retryable", "message", "msg", "errmsg", "err_msg", "reason", "field",
	"trade_state", "trade_status", "timestamp", "created_at", "updated_at", "page", "page_size", "limit",
}

// denyPolicies lists, per default-deny policy, the fields it keeps beyond
// builtinSafe: payment keeps the safe order numbers, channel and amounts;
// login the subject identifiers; a callback its event type; a file
// transfer its task id and counts.
var denyPolicies = map[Policy][]string{
	PolicyPayment: {
		"order_no", "order_id", "out_trade_no", "trade_no", "transaction_id", "out_refund_no", "refund_id",
		"channel", "pay_channel", "trade_type", "amount", "amount_cents", "total_amount", "total_fee", "currency", "fee_type",
		"event_type",
	},
	PolicyLogin: append([]string{"username", "user_name", "login_name"}, loginKeep...),
	PolicyCallback: {
		"event", "event_type", "msg_type", "change_type", "info_type",
	},
	PolicyFileTransfer: {
		"task_id", "file_count", "row_count", "total", "succeeded_count", "failed_count", "size", "content_type",
	},
}

// denySets are denyPolicies compiled with builtinSafe.
var denySets = func() map[Policy]*Fields {
	out := map[Policy]*Fields{}
	for p, names := range denyPolicies {
		out[p] = NewFields(append(append([]string(nil), builtinSafe...), names...), nil)
	}
	return out
}()

// denies reports whether p is default-deny.
func denies(p Policy) bool { return denySets[p] != nil }

// fieldClass returns how the joined name n is logged under a default-deny
// policy with declared fields safe (nil: none): fieldSafe, fieldHash or 0.
func (m matcher) fieldClass(n string) uint8 {
	if m.safe != nil {
		if c := m.safe.m[n]; c != 0 {
			return c
		}
	}
	return m.builtin.m[n]
}
