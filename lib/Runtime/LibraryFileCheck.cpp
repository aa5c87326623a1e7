//===- LibraryFileCheck.cpp - Is a file a whole shared library? -----------===//

#include "LibraryFileCheck.h"

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <vector>

using namespace rnn::runtime;

namespace {

#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
#else
#error "LibraryFileCheck: unknown host architecture"
#endif

/// Whether [offset, offset + size) lies within a file of `fileSize` bytes.
bool inside(uint64_t offset, uint64_t size, uint64_t fileSize) {
  return offset <= fileSize && size <= fileSize - offset;
}

} // namespace

LibraryFileProblem rnn::runtime::checkLibraryFile(const std::string &path,
                                                  std::string &reason) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file)
    return LibraryFileProblem::Unreadable;
  auto fileSize = static_cast<uint64_t>(file.tellg());
  file.seekg(0);
  Elf64_Ehdr header;
  if (fileSize < EI_NIDENT ||
      !file.read(reinterpret_cast<char *>(&header.e_ident), EI_NIDENT) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return LibraryFileProblem::NotElf;
  auto damaged = [&](const std::string &what) {
    reason = what + " (" + std::to_string(fileSize) + " bytes)";
    return LibraryFileProblem::Damaged;
  };
  if (header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB)
    return damaged("not a 64-bit little-endian ELF file");
  if (fileSize < sizeof(header) ||
      !file.read(reinterpret_cast<char *>(&header) + EI_NIDENT,
                 sizeof(header) - EI_NIDENT))
    return damaged("the file ends inside its ELF header");
  if (header.e_type != ET_DYN)
    return damaged("not a shared library (ELF type " +
                   std::to_string(header.e_type) + ")");
  if (header.e_machine != kMachine)
    return damaged("built for another architecture (ELF machine " +
                   std::to_string(header.e_machine) + ")");
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 ||
      !inside(header.e_phoff, uint64_t(header.e_phnum) * sizeof(Elf64_Phdr),
              fileSize))
    return damaged("its program headers are not inside the file: it is "
                   "truncated or damaged");
  if (header.e_shoff != 0 &&
      (header.e_shentsize != sizeof(Elf64_Shdr) ||
       !inside(header.e_shoff, uint64_t(header.e_shnum) * sizeof(Elf64_Shdr),
               fileSize)))
    return damaged("its section headers are not inside the file: it is "
                   "truncated or damaged");
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  file.seekg(static_cast<std::streamoff>(header.e_phoff));
  if (!file.read(
          reinterpret_cast<char *>(segments.data()),
          static_cast<std::streamsize>(segments.size() * sizeof(Elf64_Phdr))))
    return damaged("its program headers cannot be read");
  for (const Elf64_Phdr &segment : segments) {
    if (segment.p_type != PT_LOAD && segment.p_type != PT_DYNAMIC)
      continue;
    if (!inside(segment.p_offset, segment.p_filesz, fileSize))
      return damaged("a segment (" + std::to_string(segment.p_filesz) +
                     " bytes at offset " + std::to_string(segment.p_offset) +
                     ") lies past the end of the file: it is truncated");
  }
  return LibraryFileProblem::None;
}
