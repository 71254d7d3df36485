// Files a flag or a plan names are read with a limit: /dev/zero, a FIFO that never ends or a
// file larger than its kind allows is refused with one line, before it fills memory.
#include "common/bounded_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "common/json_file.h"
#include "error_text.h"
#include "test_data.h"

namespace sandwich {
namespace {

constexpr FileKind kSmall{"test file", 1024};

std::string error_of(const std::filesystem::path& p, const FileKind& kind = kSmall) {
  return test::error_text([&] { read_bounded_file(p, kind); });
}

// Writes `bytes` bytes into the FIFO at `p` once a reader has opened it, giving up after a few
// seconds (so that a reader that never opens cannot hang the test); a reader that stops early
// ends the writing.
class FifoWriter {
 public:
  FifoWriter(const std::filesystem::path& p, size_t bytes)
      : thread_([p, bytes] {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
          int fd = -1;
          while ((fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 &&
                 std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          if (fd < 0) return;
          ::fcntl(fd, F_SETFL, 0);  // blocking from now on
          const std::string chunk(4096, 'x');
          for (size_t left = bytes; left > 0;) {
            const ssize_t n = ::write(fd, chunk.data(), std::min(left, chunk.size()));
            if (n <= 0) break;  // EPIPE: the reader has stopped
            left -= static_cast<size_t>(n);
          }
          ::close(fd);
        }) {}
  ~FifoWriter() { thread_.join(); }

 private:
  std::thread thread_;
};

TEST(BoundedFile, ReadsAFileUpToItsLimit) {
  test::TempDir dir;
  std::ofstream(dir / "a") << std::string(1024, 'a');
  EXPECT_EQ(read_bounded_file(dir / "a", kSmall), std::string(1024, 'a'));
  std::ofstream(dir / "empty");
  EXPECT_EQ(read_bounded_file(dir / "empty", kSmall), "");
}

TEST(BoundedFile, RefusesAFileOverItsLimitNamingTheKind) {
  test::TempDir dir;
  std::ofstream(dir / "big") << std::string(1025, 'a');
  EXPECT_EQ(error_of(dir / "big"), "test file " + (dir / "big").string() +
                                       ": larger than 1 KiB (the limit for a test file)");
  std::ofstream(dir / "t.jinja") << std::string(file_kinds::kChatTemplate.limit + 1, ' ');
  EXPECT_EQ(error_of(dir / "t.jinja", file_kinds::kChatTemplate),
            "chat template " + (dir / "t.jinja").string() +
                ": larger than 1 MiB (the limit for a chat template)");
}

TEST(BoundedFile, RefusesDevicesDirectoriesAndMissingFiles) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(error_of("/dev/zero", file_kinds::kChatTemplate),
            "chat template /dev/zero: a character device, not a file");
  EXPECT_EQ(error_of("/dev/urandom", file_kinds::kTextToScore),
            "text file /dev/urandom: a character device, not a file");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  test::TempDir dir;
  EXPECT_EQ(error_of(dir.path()), "test file " + dir.path().string() + ": a directory, not a file");
  EXPECT_EQ(error_of(dir / "none"), "test file " + (dir / "none").string() + ": no such file");
}

// A pipe is read as a file (`--chat-template <(...)`), but no more of it than the limit.
TEST(BoundedFile, ReadsAPipeButNoMoreThanTheLimit) {
  test::TempDir dir;
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  {
    FifoWriter w(fifo, 1000);
    EXPECT_EQ(read_bounded_file(fifo, kSmall), std::string(1000, 'x'));
  }
  // The writer would go on for 64 MiB; the reader stops at 1 KiB + 1 and the writer gets EPIPE.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  {
    FifoWriter w(fifo, size_t{64} << 20);
    EXPECT_EQ(error_of(fifo),
              "test file " + fifo.string() + ": larger than 1 KiB (the limit for a test file)");
  }
  ::sigaction(SIGPIPE, &old, nullptr);
}

// For files another library reads (hwloc's XML): a regular file within the limit, checked
// without opening it, so a FIFO cannot block.
TEST(BoundedFile, CheckRefusesPipesDevicesAndLargeFilesWithoutOpeningThem) {
  test::TempDir dir;
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(test::error_text([&] { check_bounded_file(fifo, file_kinds::kTopologyXml); }),
            "topology XML " + fifo.string() + ": a pipe, not a regular file");
  EXPECT_EQ(test::error_text([&] { check_bounded_file("/dev/zero", file_kinds::kTopologyXml); }),
            "topology XML /dev/zero: a character device, not a file");
  std::ofstream(dir / "big") << std::string(1025, 'a');
  EXPECT_NE(test::error_text([&] { check_bounded_file(dir / "big", kSmall); }).find("larger than"),
            std::string::npos);
  std::ofstream(dir / "ok") << "<topology/>";
  EXPECT_NO_THROW(check_bounded_file(dir / "ok", kSmall));
}

// A sparse file stands for a huge download: refused by its size, before a byte is read.
TEST(BoundedFile, AHugeFileIsRefusedBeforeReading) {
  test::TempDir dir;
  std::ofstream(dir / "plan.json") << "{";
  std::filesystem::resize_file(dir / "plan.json", std::uintmax_t{8} << 30);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(
      test::error_text([&] { read_json_file(dir / "plan.json", file_kinds::kPlan); }),
      "plan " + (dir / "plan.json").string() + ": larger than 256 MiB (the limit for a plan)");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
}

TEST(BoundedFile, JsonFilesOfEveryKindAreBounded) {
  for (const FileKind& kind :
       {file_kinds::kPlan, file_kinds::kScheduleTable, file_kinds::kModelMetadata,
        file_kinds::kTokenizer, file_kinds::kCalibration, file_kinds::kMachineDescription,
        file_kinds::kMachineParameters, file_kinds::kPlannerState, file_kinds::kSloPreset})
    EXPECT_EQ(test::error_text([&] { read_json_file("/dev/zero", kind); }),
              std::string(kind.name) + " /dev/zero: a character device, not a file");
}

}  // namespace
}  // namespace sandwich
