// Model and tokenizer paths come from the internet: one naming a device, a FIFO or a symlink to
// /dev/zero fails at once with a message, instead of blocking on open() or reading forever.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "engine/formats/mapped_file.h"
#include "engine/formats/model.h"
#include "engine/text/tokenizer.h"
#include "error_text.h"
#include "test_data.h"

namespace sandwich::engine {
namespace {

namespace fs = std::filesystem;

std::string load_error(const fs::path& p) {
  LoadOptions o;
  o.model = p.string();
  o.require_tokenizer = false;
  o.threads = 1;
  return test::error_text([&] { load_model(o); }, "loaded");
}

class HostileModelFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    fifo_ = dir_ / "fifo";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
    t0_ = std::chrono::steady_clock::now();
  }
  // Nothing here may wait on the FIFO's writer (there is none) or read the device for long.
  void TearDown() override {
    EXPECT_LT(std::chrono::steady_clock::now() - t0_, std::chrono::seconds(2));
  }
  test::TempDir dir_;
  fs::path fifo_;
  std::chrono::steady_clock::time_point t0_;
};

TEST_F(HostileModelFiles, WeightsMustBeARegularFile) {
  EXPECT_NE(load_error("/dev/zero").find("model /dev/zero is not a regular file"),
            std::string::npos);
  EXPECT_NE(load_error(fifo_).find("model " + fifo_.string() + " is not a regular file"),
            std::string::npos);
  // The mapping itself refuses them too, without waiting for the FIFO's writer.
  for (const fs::path& p : {fs::path("/dev/zero"), fifo_})
    EXPECT_NE(test::error_text([&] { MappedFile f(p); }).find("is not a regular file"),
              std::string::npos);
}

TEST_F(HostileModelFiles, TokenizerFilesMustBeRegularAndBounded) {
  for (const fs::path& p : {fs::path("/dev/zero"), fifo_})
    EXPECT_NE(test::error_text([&] { load_tokenizer(p); }).find("is not a regular file"),
              std::string::npos);
  // A model folder whose tokenizer.json is a link to /dev/zero.
  fs::create_directory(dir_ / "model");
  fs::create_symlink("/dev/zero", dir_ / "model/tokenizer.json");
  EXPECT_NE(test::error_text([&] { load_tokenizer(dir_ / "model"); })
                .find("tokenizer file " + (dir_ / "model/tokenizer.json").string() +
                      ": a character device, not a file"),
            std::string::npos);
}

// A sparse file: as large as its kind may not be, without the disk or the time to write it.
void sparse_file(const fs::path& p, std::uintmax_t bytes) {
  std::ofstream(p) << "{";
  fs::resize_file(p, bytes);
}

TEST_F(HostileModelFiles, OversizedTokenizerFilesAreRefusedBeforeReading) {
  sparse_file(dir_ / "tokenizer.json", (std::uintmax_t{256} << 20) + 1);
  EXPECT_NE(test::error_text([&] { load_tokenizer(dir_ / "tokenizer.json"); })
                .find("tokenizer file " + (dir_ / "tokenizer.json").string() +
                      ": larger than 256 MiB (the limit for a tokenizer file)"),
            std::string::npos);
  fs::create_directory(dir_ / "model");
  sparse_file(dir_ / "model/tokenizer.json", std::uintmax_t{4} << 30);
  EXPECT_NE(test::error_text([&] { load_tokenizer(dir_ / "model"); }).find("larger than 256 MiB"),
            std::string::npos);
}

TEST_F(HostileModelFiles, AModelFoldersConfigIsBounded) {
  fs::create_directory(dir_ / "hf");
  fs::create_symlink("/dev/zero", dir_ / "hf/config.json");
  std::ofstream(dir_ / "hf/model.safetensors") << "";
  EXPECT_NE(load_error(dir_ / "hf")
                .find("model metadata file " + (dir_ / "hf/config.json").string() +
                      ": a character device, not a file"),
            std::string::npos)
      << load_error(dir_ / "hf");
}

// sandwich-generate waiting on a prompt FIFO that never gets a writer: SIGTERM ends it at once
// with one line and the status a shell reports for the signal.
TEST_F(HostileModelFiles, SigtermStopsGenerateWhileItWaits) {
  SANDWICH_REQUIRE_DATA();
  const std::string stories = (test::data_dir() / "models/stories260K").string();
  const std::string cmd = "exec " + (test::bin_dir() / "sandwich-generate").string() + " --model " +
                          stories + "/stories260K.bin --tokenizer " + stories +
                          "/tok512.bin --prompt-file " + fifo_.string() + " 2>" +
                          (dir_ / "err").string();
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int st = 0;
  EXPECT_EQ(waitpid(pid, &st, WNOHANG), 0) << test::slurp(dir_ / "err");
  kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  pid_t done = 0;
  while ((done = waitpid(pid, &st, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (done != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    FAIL() << "still running 1 s after SIGTERM";
  }
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 128 + SIGTERM);
  EXPECT_EQ(test::slurp(dir_ / "err"), "sandwich-generate: stopped by SIGTERM while starting\n");
}

}  // namespace
}  // namespace sandwich::engine
