// Package watch holds what the bwrap and docker backends share while a
// program runs: output capped as it streams, the CPU-time limit watched at
// a pace set by the time left, exit statuses reported as 128+signal turned
// back into signals, and the verdict rules.
//
// They are the native backend's rules, so that a limit means the same on
// every backend and the same measurements are reported.
package watch
