package ucxbind

/*
#include <ucp/api/ucp.h>
*/
import "C"

import (
	"errors"
	"fmt"
)

// Status is a UCS status code (ucs_status_t). Zero is success.
type Status int32

// Status values that callers test for.
const (
	StatusOK              Status = C.UCS_OK
	StatusInProgress      Status = C.UCS_INPROGRESS
	StatusNoMessage       Status = C.UCS_ERR_NO_MESSAGE
	StatusNoResource      Status = C.UCS_ERR_NO_RESOURCE
	StatusCanceled        Status = C.UCS_ERR_CANCELED
	StatusTruncated       Status = C.UCS_ERR_MESSAGE_TRUNCATED
	StatusUnreachable     Status = C.UCS_ERR_UNREACHABLE
	StatusInvalidParam    Status = C.UCS_ERR_INVALID_PARAM
	StatusNoMemory        Status = C.UCS_ERR_NO_MEMORY
	StatusEndpointTimeout Status = C.UCS_ERR_ENDPOINT_TIMEOUT
	StatusConnReset       Status = C.UCS_ERR_CONNECTION_RESET
)

// Error is a failed UCS status, wrapped with the operation that returned it.
type Error struct {
	Op     string
	Status Status
}

func (e *Error) Error() string {
	return fmt.Sprintf("ucx: %s: %s", e.Op, C.GoString(C.ucs_status_string(C.ucs_status_t(e.Status))))
}

// Is lets errors.Is(err, ErrTruncated) and friends match by status.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Op == "" && t.Status == e.Status
	}
	return false
}

// Sentinels for errors.Is.
var (
	ErrTruncated = &Error{Status: StatusTruncated}
	ErrCanceled  = &Error{Status: StatusCanceled}
)

func statusErr(op string, st C.int) error {
	if st == C.UCS_OK {
		return nil
	}
	return &Error{Op: op, Status: Status(st)}
}
