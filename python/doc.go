// Package python reads what CPython interpreters are running: for a thread
// of a process that runs CPython 3.8 to 3.13, the Python frames (function,
// file, line) of its current call stack, innermost first, grouped by the
// calls of the interpreter's C eval function that run them, so that the
// recorder can put each group where its eval function's native frame is.
//
// It finds the interpreter by the ELF symbol _PyRuntime of the python
// binary or of libpython, tells the version by the file's name or the
// Py_Version symbol, and knows each version's structure layouts: 3.13 and
// later publish them in _PyRuntime (_Py_DebugOffsets); those of 3.8 to
// 3.12 are tables here, taken from CPython's headers for 64-bit Linux
// builds. Every pointer it follows is checked where it can be (a code
// object's type is PyCode_Type), so a wrong guess reads as nothing rather
// than as wrong frames.
//
// It reads the target's memory through the function it is given (the
// backend's, at the sample's moment) and never writes it; what it learns
// of a process (where its interpreter is, code objects' names and line
// tables, each thread's state) is cached per process.
package python
