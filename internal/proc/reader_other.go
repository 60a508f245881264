//go:build !linux

package proc

import "os"

// SeesReaderGone says that ReaderGone tells a reader gone without a write:
// it does not here.
const SeesReaderGone = false

// ReaderGone reports that the reader of w is not known to be gone: only
// the next write says so.
func ReaderGone(*os.File) bool { return false }
