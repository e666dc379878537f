//go:build unix

package main

import "syscall"

// Flags of every open of gen's output files: never follow a link at the name, and
// never block opening a FIFO.
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)
