// The ward binary's own hardening: position-independent (its code and data move with ASLR),
// RELRO, and every symbol bound at load so that the whole GOT is read-only (CMakeLists.txt).
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

std::vector<char> ReadWhole(const std::string& path) {
  std::vector<char> bytes;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return bytes;
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    bytes.resize(got);
  }
  close(fd);
  return bytes;
}

struct Hardening {
  bool elf64 = false;
  bool shared_object_type = false;  // ET_DYN: position-independent
  bool relro = false;               // PT_GNU_RELRO
  bool bind_now = false;            // DF_BIND_NOW or DF_1_NOW
  bool pie_flag = false;            // DF_1_PIE
};

Hardening Inspect(const std::vector<char>& f) {
  Hardening h;
  if (f.size() < sizeof(Elf64_Ehdr) || std::memcmp(f.data(), ELFMAG, SELFMAG) != 0 ||
      f[EI_CLASS] != ELFCLASS64) {
    return h;
  }
  h.elf64 = true;
  Elf64_Ehdr eh;
  std::memcpy(&eh, f.data(), sizeof eh);
  h.shared_object_type = eh.e_type == ET_DYN;
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    const size_t off = eh.e_phoff + i * eh.e_phentsize;
    if (eh.e_phentsize < sizeof(Elf64_Phdr) || off + sizeof(Elf64_Phdr) > f.size()) break;
    Elf64_Phdr ph;
    std::memcpy(&ph, f.data() + off, sizeof ph);
    if (ph.p_type == PT_GNU_RELRO) h.relro = true;
    if (ph.p_type != PT_DYNAMIC) continue;
    for (size_t d = ph.p_offset;
         d + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz && d + sizeof(Elf64_Dyn) <= f.size();
         d += sizeof(Elf64_Dyn)) {
      Elf64_Dyn dyn;
      std::memcpy(&dyn, f.data() + d, sizeof dyn);
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag == DT_BIND_NOW) h.bind_now = true;
      if (dyn.d_tag == DT_FLAGS && (dyn.d_un.d_val & DF_BIND_NOW)) h.bind_now = true;
      if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_NOW)) h.bind_now = true;
      if (dyn.d_tag == DT_FLAGS_1 && (dyn.d_un.d_val & DF_1_PIE)) h.pie_flag = true;
    }
  }
  return h;
}

TEST(BinaryHardening, WardIsPositionIndependentWithFullRelro) {
  const std::vector<char> bytes = ReadWhole(std::string(WARD_BUILD_BIN) + "/ward");
  ASSERT_FALSE(bytes.empty()) << "cannot read " << WARD_BUILD_BIN << "/ward";
  const Hardening h = Inspect(bytes);
  ASSERT_TRUE(h.elf64);
  EXPECT_TRUE(h.shared_object_type) << "not position-independent (e_type is not ET_DYN)";
  EXPECT_TRUE(h.pie_flag) << "no DF_1_PIE";
  EXPECT_TRUE(h.relro) << "no PT_GNU_RELRO segment";
  EXPECT_TRUE(h.bind_now) << "symbols are bound lazily: the GOT stays writable (link with -z now)";
}

// The inspection itself can fail: a hand-made header without the flags fails each count, and
// the same header with them passes each.
TEST(BinaryHardening, TheInspectionSeesMissingFlags) {
  std::vector<char> f(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) * 2 + sizeof(Elf64_Dyn) * 2, 0);
  Elf64_Ehdr eh = {};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_type = ET_EXEC;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = 1;
  Elf64_Phdr dyn_ph = {};
  dyn_ph.p_type = PT_DYNAMIC;
  dyn_ph.p_offset = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) * 2;
  dyn_ph.p_filesz = sizeof(Elf64_Dyn) * 2;
  Elf64_Dyn flags = {};
  flags.d_tag = DT_FLAGS_1;
  flags.d_un.d_val = 0;
  std::memcpy(f.data(), &eh, sizeof eh);
  std::memcpy(f.data() + eh.e_phoff, &dyn_ph, sizeof dyn_ph);
  std::memcpy(f.data() + dyn_ph.p_offset, &flags, sizeof flags);
  Hardening h = Inspect(f);
  ASSERT_TRUE(h.elf64);
  EXPECT_FALSE(h.shared_object_type);
  EXPECT_FALSE(h.pie_flag);
  EXPECT_FALSE(h.relro);
  EXPECT_FALSE(h.bind_now);

  // The same header with every flag set passes each count.
  eh.e_type = ET_DYN;
  eh.e_phnum = 2;
  Elf64_Phdr relro = {};
  relro.p_type = PT_GNU_RELRO;
  flags.d_un.d_val = DF_1_NOW | DF_1_PIE;
  std::memcpy(f.data(), &eh, sizeof eh);
  std::memcpy(f.data() + eh.e_phoff + sizeof(Elf64_Phdr), &relro, sizeof relro);
  std::memcpy(f.data() + dyn_ph.p_offset, &flags, sizeof flags);
  h = Inspect(f);
  EXPECT_TRUE(h.shared_object_type);
  EXPECT_TRUE(h.pie_flag);
  EXPECT_TRUE(h.relro);
  EXPECT_TRUE(h.bind_now);
}

}  // namespace
