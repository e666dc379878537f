//go:build !unix

package main

// Without O_NOFOLLOW and O_NONBLOCK the Lstat checks before writing stand alone, and
// the rename over the name still never writes through a link.
const (
	oNoFollow = 0
	oNonBlock = 0
)
