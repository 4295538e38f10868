// The fuzzers' fork server (tools/fuzz/fuzzlib.py starts one per worker): each request
// is one tilec command line, run by tilec_main -- the very function tilec's main() calls
// -- in a child forked from this process, with its standard output and error written to
// a file and its exit status, signal or time-out reported back. A tilec process spends
// most of a small run starting up (the dynamic linking of libLLVM, about 50 ms); a fork
// of this process, which did that once, does not. The child is a process of its own, in
// a process group of its own, so that a crash, a hang (killed with its group, ptxas and
// ld.lld included) or a heap it corrupts stays there, as with a separate tilec. It ends
// without running static destructors (see below).
//
// Protocol, on standard input and output, one request at a time:
//   request:  "TIMEOUT_MS OUTPUT_PATH_LENGTH ARGC\n", OUTPUT_PATH "\n", then ARGC lines,
//             one argument each (argv[0] first: the tilec whose stdlib is used);
//             arguments holding a newline cannot be sent (the caller runs tilec itself)
//   reply:    "exit N\n", "signal N\n", "timeout\n" or "error MESSAGE\n"
// End of input ends the server.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "driver/main.h"

namespace {

// Standard input, read with read(2): no stdio buffer for a child to inherit.
class Input {
public:
    bool line(std::string& out) {
        out.clear();
        for (;;) {
            if (pos_ == end_) {
                ssize_t n = read(0, buf_, sizeof buf_);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) return false;
                pos_ = 0;
                end_ = static_cast<size_t>(n);
            }
            char c = buf_[pos_++];
            if (c == '\n') return true;
            out += c;
        }
    }

private:
    char buf_[1 << 16];
    size_t pos_ = 0, end_ = 0;
};

void reply(const std::string& text) {
    std::string line = text + "\n";
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
        ssize_t n = write(1, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) std::_Exit(1);  // the fuzzer is gone
        p += n;
        left -= static_cast<size_t>(n);
    }
}

// Waits for `pid` at most `timeout_ms`; true when it ended (its status in `status`).
bool wait_for(pid_t pid, long timeout_ms, int& status) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
#ifdef SYS_pidfd_open
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
    int pidfd = -1;
#endif
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            if (pidfd >= 0) close(pidfd);
            return true;
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            if (pidfd >= 0) close(pidfd);
            return false;
        }
        if (pidfd >= 0) {
            pollfd p{pidfd, POLLIN, 0};
            poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
}

}  // namespace

int main() {
    Input in;
    std::string head;
    while (in.line(head)) {
        long timeout_ms = 0;
        size_t path_len = 0, argc = 0;
        if (std::sscanf(head.c_str(), "%ld %zu %zu", &timeout_ms, &path_len, &argc) != 3 || argc == 0 ||
            timeout_ms <= 0) {
            reply("error bad request: " + head);
            return 1;
        }
        std::string out_path;
        std::vector<std::string> args(argc);
        bool whole = in.line(out_path) && out_path.size() == path_len;
        for (size_t i = 0; i < argc && whole; ++i) whole = in.line(args[i]);
        if (!whole) {
            reply("error truncated request");
            return 1;
        }
        pid_t pid = fork();
        if (pid < 0) {
            reply(std::string("error fork: ") + std::strerror(errno));
            continue;
        }
        if (pid == 0) {
            setpgid(0, 0);
            int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
            int null = open("/dev/null", O_RDONLY);
            if (fd < 0 || null < 0) std::_Exit(125);
            dup2(null, 0);
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
            close(null);
            std::vector<char*> argv;
            for (auto& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            int rc = tilec::driver::tilec_main(static_cast<int>(argc), argv.data());
            // Unlike main() returning, no static destructors (tilec registers no atexit
            // work): freeing what LLVM and ANTLR set up at start-up takes about 10 ms,
            // three times a small run's own work.
            std::fflush(nullptr);
            std::_Exit(rc);
        }
        setpgid(pid, pid);  // either of the two calls may run first
        int status = 0;
        if (!wait_for(pid, timeout_ms, status)) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            reply("timeout");
        } else if (WIFSIGNALED(status)) {
            reply("signal " + std::to_string(WTERMSIG(status)));
        } else {
            reply("exit " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1));
        }
    }
    return 0;
}
