//===- LibraryFileCheck.h - Is a file a whole shared library? ---*- C++ -*-===//
//
// dlopen maps a shared library's segments as its program headers describe
// them and faults (SIGBUS, SIGSEGV) on pages past the end of a truncated file,
// so the loader checks a model file's structure before dlopen.
//
//===----------------------------------------------------------------------===//

#ifndef RNN_RUNTIME_LIBRARYFILECHECK_H
#define RNN_RUNTIME_LIBRARYFILECHECK_H

#include <string>

namespace rnn::runtime {

/// What a library file check found.
enum class LibraryFileProblem {
  /// An ELF shared library of this machine whose parts are all in the file.
  None,
  /// No ELF header (dlopen reports it as it always did).
  NotElf,
  /// Cannot be opened or read (dlopen reports it).
  Unreadable,
  /// An ELF file, but not one dlopen can map safely.
  Damaged,
};

/// Checks the ELF header of the file at `path` (64-bit, this machine's byte
/// order and architecture, a shared object) and that its program headers,
/// the segments they describe and the section header table lie inside the
/// file. `reason` says what is wrong when the answer is Damaged.
LibraryFileProblem checkLibraryFile(const std::string &path,
                                    std::string &reason);

} // namespace rnn::runtime

#endif // RNN_RUNTIME_LIBRARYFILECHECK_H
