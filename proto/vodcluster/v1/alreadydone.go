package vodclusterv1

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ReasonAlreadyDone is the google.rpc.ErrorInfo reason of an Admin
// call's NOT_FOUND answer whose end state already holds, so that nothing
// was to be done: Unpin of a title not pinned there (the node registered
// or known, the title in the catalog), SuspendSubscriber lifting a
// subscriber not suspended, EndSessions of a subscriber with no live
// session (one the users file holds). An unknown node, title or
// subscriber is NOT_FOUND without it.
const ReasonAlreadyDone = "ALREADY_DONE"

// AlreadyDone returns the NOT_FOUND error msg of a change whose end state
// already holds, carrying an ErrorInfo with ReasonAlreadyDone
// (IsAlreadyDone). A client that does not read the details sees
// NOT_FOUND msg, as before.
func AlreadyDone(msg string) error {
	st := status.New(codes.NotFound, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonAlreadyDone, Domain: ErrorDomain}); err == nil {
		st = d
	}
	return st.Err()
}

// IsAlreadyDone reports whether err (a gRPC status error, or one
// wrapping it) is an answer AlreadyDone made: NOT_FOUND with an
// ErrorInfo of ReasonAlreadyDone in ErrorDomain. A manager that predates
// it answers the same case without the detail: false.
func IsAlreadyDone(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return false
	}
	st := se.GRPCStatus()
	if st.Code() != codes.NotFound {
		return false
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == ReasonAlreadyDone && ei.GetDomain() == ErrorDomain {
			return true
		}
	}
	return false
}
