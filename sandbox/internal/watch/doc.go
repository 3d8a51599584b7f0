// Package watch holds the supervision of a run, one for every backend
// (Supervisor): output capped as it streams, the CPU-time limit watched at
// a pace set by the time left, the wall-time limit, cancellation, the
// bounded drain of output after the end, the samples and totals, and the
// verdict (Decide). A backend supplies only how its program is waited for,
// stopped and measured (Program). It also turns exit statuses reported as
// 128+signal back into signals.
//
// They are the native backend's rules, so that a limit means the same on
// every backend and the same measurements are reported.
package watch
