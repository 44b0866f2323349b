package ahp

import (
	"errors"
	"fmt"
)

// Error is a protocol error: a JSON-RPC error code with its standard
// message. The values below are sentinels; wrap them with context, operation
// first:
//
//	fmt.Errorf("%w: %s", ahp.ErrResourceNotFound, uri)
//
// The rpc layer answers with the code of the wrapped sentinel and the text of
// the outer error, so the wire message reads "Resource not found: <uri>".
// Anything that wraps no sentinel is an internal error (-32603).
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is matches any *Error with the same code, so a wrapped copy of a sentinel
// still satisfies errors.Is.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// JSON-RPC and AHP error codes (AHP-1.0.md §10).
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeInternalError              = -32603
	CodeSessionNotFound            = -32001
	CodeProviderNotFound           = -32002
	CodeSessionAlreadyExists       = -32003
	CodeTurnInProgress             = -32004
	CodeUnsupportedProtocolVersion = -32005
	CodeAuthRequired               = -32007
	CodeNotFound                   = -32008
	CodePermissionDenied           = -32009
	CodeAlreadyExists              = -32010
	CodeConflict                   = -32011
)

// Sentinels. ErrResourceNotFound is -32001, the code AHP names
// SessionNotFound and hosts use for any unknown channel.
var (
	ErrParse                      = &Error{CodeParseError, "Parse error"}
	ErrInvalidRequest             = &Error{CodeInvalidRequest, "Invalid request"}
	ErrMethodNotFound             = &Error{CodeMethodNotFound, "Method not found"}
	ErrInvalidParams              = &Error{CodeInvalidParams, "Invalid params"}
	ErrInternal                   = &Error{CodeInternalError, "Internal error"}
	ErrResourceNotFound           = &Error{CodeSessionNotFound, "Resource not found"}
	ErrProviderNotFound           = &Error{CodeProviderNotFound, "Provider not found"}
	ErrSessionAlreadyExists       = &Error{CodeSessionAlreadyExists, "Session already exists"}
	ErrTurnInProgress             = &Error{CodeTurnInProgress, "Turn in progress"}
	ErrUnsupportedProtocolVersion = &Error{CodeUnsupportedProtocolVersion, "Unsupported protocol version"}
	ErrAuthRequired               = &Error{CodeAuthRequired, "Authentication required"}
	ErrNotFound                   = &Error{CodeNotFound, "Not found"}
	ErrPermissionDenied           = &Error{CodePermissionDenied, "Permission denied"}
	ErrAlreadyExists              = &Error{CodeAlreadyExists, "Already exists"}
	ErrConflict                   = &Error{CodeConflict, "Conflict"}
)

// dataError attaches the JSON-RPC error's data member to an error.
type dataError struct {
	err  error
	data any
}

func (e *dataError) Error() string { return e.err.Error() }
func (e *dataError) Unwrap() error { return e.err }

// WithData returns err carrying data as the JSON-RPC error's data member
// (for example {"supportedVersions":[...]} on -32005).
func WithData(err error, data any) error { return &dataError{err: err, data: data} }

// Errorf wraps a sentinel with a formatted message: Errorf(ErrInvalidParams,
// "params.channel: required") reads "Invalid params: params.channel: required".
func Errorf(sentinel *Error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// WireError returns the code, message and data to answer err with. An error
// wrapping no sentinel is -32603 with its own text.
func WireError(err error) (code int, message string, data any) {
	var de *dataError
	if errors.As(err, &de) {
		data = de.data
	}
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Code, err.Error(), data
	}
	return CodeInternalError, err.Error(), data
}
