package vodclusterv1

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the domain of the google.rpc.ErrorInfo details the
// manager attaches to some of its Admin answers.
const ErrorDomain = "vodcluster"

// ReasonNotSaved is the google.rpc.ErrorInfo reason of an Admin call's
// UNAVAILABLE answer whose change is in use in the manager that answered
// but was not written to its store (SetPolicy, SetNode with a change,
// ForgetNode): a restart, a takeover or another manager of the pair may
// not have it. Without it, an UNAVAILABLE answer changed nothing.
const ReasonNotSaved = "CHANGE_NOT_SAVED"

// NotSaved returns the UNAVAILABLE error msg of a change in use in the
// manager but not saved in its store, carrying an ErrorInfo with
// ReasonNotSaved (IsNotSaved). A client that does not read the details
// sees UNAVAILABLE msg, as before.
func NotSaved(msg string) error {
	st := status.New(codes.Unavailable, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: ReasonNotSaved, Domain: ErrorDomain}); err == nil {
		st = d
	}
	return st.Err()
}

// IsNotSaved reports whether err (a gRPC status error, or one wrapping
// it) is an answer NotSaved made: UNAVAILABLE with an ErrorInfo of
// ReasonNotSaved in ErrorDomain. A manager that predates it answers the
// same case without the detail: false.
func IsNotSaved(err error) bool {
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return false
	}
	st := se.GRPCStatus()
	if st.Code() != codes.Unavailable {
		return false
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == ReasonNotSaved && ei.GetDomain() == ErrorDomain {
			return true
		}
	}
	return false
}
