#pragma once
// exit_process: ends a command-line tool without running static destructors.
//
// Why: libtorch's static objects deregister every operator from the dispatcher at exit, which
// took 0.09-0.13 s of each ml-100k run as a process (measured: time from the end of main to the
// process's end), 5-10% of a whole BPR or EASE run. Everything a run writes is already on disk
// by then (results and checkpoints through a temporary file and a rename); this closes the log
// file, flushes the standard streams and calls _Exit.
namespace recbole {

[[noreturn]] void exit_process(int code);

}  // namespace recbole
