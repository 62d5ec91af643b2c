// Starts `embed serve` as a child process on a free loopback port for the server tests, and
// talks to it through cpp-httplib's client (a real HTTP library, independent of the server's).
#pragma once

#include <httplib.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace embed::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ServerProcess {
 public:
  // `args` after the model path, e.g. {"--max-client-batch-size", "4"}; model "": none (args give
  // them with --model NAME=PATH).
  ServerProcess(const std::string& model, std::vector<std::string> args = {}) {
    static int counter = 0;
    log_ = "/tmp/embed_server_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".log";
    std::vector<std::string> argv = {EMBED_BIN, "serve", "-p", "0", "-t", "2"};
    if (!model.empty()) argv.insert(argv.begin() + 2, model);
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      std::vector<char*> c;
      for (std::string& a : argv) c.push_back(a.data());
      c.push_back(nullptr);
      ::execv(c[0], c.data());
      ::_exit(127);
    }
    for (int i = 0; i < 600 && port_ == 0; i++) {  // up to 30 s for the model to load
      const std::string log = slurp(log_);
      const size_t at = log.find("listening on http://127.0.0.1:");
      if (at != std::string::npos) port_ = std::stoi(log.substr(at + 30));
      int status = 0;
      if (port_ == 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return;
      }
      if (port_ == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~ServerProcess() {
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::remove(log_.c_str());
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running() const { return port_ != 0 && !exited_; }
  std::string log() const { return slurp(log_); }
  // Exit code of a server that refused to start (or after terminate()).
  int exit_code() const { return exit_code_; }
  // SIGTERM, then the exit code (or -1 if it did not exit within `seconds`).
  int terminate(double seconds = 20) {
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < seconds * 20; i++) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return exit_code_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    c.set_connection_timeout(5, 0);
    return c;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
  bool exited_ = false;
  int exit_code_ = -1;
};

}  // namespace embed::test
