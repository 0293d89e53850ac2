package deliver

import (
	"fmt"
	"io"
)

// ReadError is the error of a stream whose read of its title's file
// failed (EndDiskRead).
type ReadError struct {
	Off int64 // bytes: where in the title the read started
	// Err is the read's error: the file's (an I/O error), or
	// io.ErrUnexpectedEOF when the file ends short of the bytes its
	// index has.
	Err error
}

// Error says where in the title the read started, bytes, and why it
// failed.
func (e *ReadError) Error() string {
	return fmt.Sprintf("deliver: reading the title at %d: %v", e.Off, e.Err)
}

// Unwrap returns the read's error.
func (e *ReadError) Unwrap() error { return e.Err }

// readError returns the ReadError of a read at off, below the bytes the
// title's index has, that failed with err: io.EOF there is the file
// ending short of its index (io.ErrUnexpectedEOF).
func readError(off int64, err error) *ReadError {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &ReadError{Off: off, Err: err}
}

// EndedBy returns why the stream ended by itself (a read of its title's
// file or its fill failed, a slow client, its connection gone) and the
// error it ended with; "" when it has not (playing, paused, at the end of
// the title, or stopped by Close or Abort first). It holds from the
// moment the stream stops, before OnEnd hears it (which waits for the
// RTCP BYE telling the client to go): a TEARDOWN the BYE brings in
// meanwhile ends the session for that reason, not for the TEARDOWN.
func (s *Stream) EndedBy() (EndReason, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endedBy, s.endErr
}

// EndedBy is Stream.EndedBy for elementary streams.
func (s *ESStream) EndedBy() (EndReason, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endedBy, s.endErr
}
