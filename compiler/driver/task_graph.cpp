#include "driver/task_graph.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "support/diagnostics.h"

namespace tilec::driver {

size_t TaskGraph::add(std::function<void()> run, std::vector<size_t> deps) {
    for (size_t d : deps) TILEC_CHECK(d < tasks_.size(), "a task may depend only on tasks added before it");
    tasks_.push_back(Task{std::move(run), std::move(deps), nullptr, false});
    return tasks_.size() - 1;
}

namespace {

enum class State { Waiting, Running, Done };

struct Shared {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<State> state;
    size_t done = 0;
};

}  // namespace

void TaskGraph::run(unsigned jobs) {
    if (tasks_.empty()) return;
    Shared shared;
    shared.state.assign(tasks_.size(), State::Waiting);
    auto worker = [&] {
        std::unique_lock<std::mutex> lock(shared.mutex);
        while (shared.done < tasks_.size()) {
            size_t pick = tasks_.size();
            for (size_t i = 0; i < tasks_.size() && pick == tasks_.size(); ++i) {
                if (shared.state[i] != State::Waiting) continue;
                bool ready = std::all_of(tasks_[i].deps.begin(), tasks_[i].deps.end(),
                                         [&](size_t d) { return shared.state[d] == State::Done; });
                if (ready) pick = i;
            }
            if (pick == tasks_.size()) {
                shared.changed.wait(lock);
                continue;
            }
            Task& task = tasks_[pick];
            shared.state[pick] = State::Running;
            task.skipped = std::any_of(task.deps.begin(), task.deps.end(),
                                       [&](size_t d) { return tasks_[d].error || tasks_[d].skipped; });
            if (!task.skipped) {
                lock.unlock();
                auto start = std::chrono::steady_clock::now();
                try {
                    task.run();
                } catch (...) {
                    task.error = std::current_exception();
                }
                task.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                lock.lock();
            }
            shared.state[pick] = State::Done;
            ++shared.done;
            shared.changed.notify_all();
        }
    };
    // Codegen recurses over the IR as the pipeline's thread does: give each worker a
    // large stack (address space, touched only as used).
    unsigned threads = std::max(1u, std::min<unsigned>(jobs, static_cast<unsigned>(tasks_.size())));
    std::vector<pthread_t> started;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256u << 20);
    auto entry = [](void* p) -> void* {
        (*static_cast<std::function<void()>*>(p))();
        return nullptr;
    };
    std::function<void()> body = worker;
    for (unsigned i = 0; i < threads; ++i) {
        pthread_t t;
        if (pthread_create(&t, &attr, entry, &body) == 0) started.push_back(t);
    }
    pthread_attr_destroy(&attr);
    if (started.empty()) worker();  // no thread could start: run everything here
    for (pthread_t t : started) pthread_join(t, nullptr);
    for (auto& task : tasks_)
        if (task.error) std::rethrow_exception(task.error);
}

TaskGraph::Times TaskGraph::times() const {
    Times t;
    t.tasks = tasks_.size();
    std::vector<double> finish(tasks_.size(), 0.0);  // dependencies come first
    for (size_t i = 0; i < tasks_.size(); ++i) {
        double ready = 0;
        for (size_t d : tasks_[i].deps) ready = std::max(ready, finish[d]);
        finish[i] = ready + tasks_[i].seconds;
        t.work += tasks_[i].seconds;
        t.chain = std::max(t.chain, finish[i]);
    }
    return t;
}

}  // namespace tilec::driver
