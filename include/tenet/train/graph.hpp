// cuda_graph: one captured CUDA Graph, instantiated once and replayed.
// Capture records what a function enqueues on a stream without running it;
// replaying costs one launch however many kernels the graph holds. Valid
// while every pointer the captured work used stays allocated and in place,
// which tenet's static models guarantee. graph_cache<Key> keeps one per key.
#pragma once

#include "../memory/cuda_check.hpp"
#include "../memory/stream.hpp"

#include <cuda_runtime_api.h>

#include <utility>
#include <vector>

namespace tenet::train {

class cuda_graph {
public:
    cuda_graph() = default;
    cuda_graph(cuda_graph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
    cuda_graph& operator=(cuda_graph&& other) noexcept
    {
        std::swap(exec_, other.exec_);
        return *this;
    }
    cuda_graph(const cuda_graph&) = delete;
    cuda_graph& operator=(const cuda_graph&) = delete;
    ~cuda_graph()
    {
        if (exec_) cudaGraphExecDestroy(exec_);
    }

    // Records what record() enqueues on s (which must not be the legacy
    // default stream), and instantiates it. Nothing runs yet.
    template <class F>
    void capture(stream_ref s, F&& record)
    {
        TENET_CUDA_CHECK(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal));
        cudaGraph_t graph = nullptr;
        try {
            record();
        } catch (...) {
            cudaStreamEndCapture(s.get(), &graph);  // leave the stream usable
            if (graph) cudaGraphDestroy(graph);
            throw;
        }
        TENET_CUDA_CHECK(cudaStreamEndCapture(s.get(), &graph));
        cudaGraphExec_t exec = nullptr;
        const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        TENET_CUDA_CHECK(status);
        if (exec_) cudaGraphExecDestroy(exec_);
        exec_ = exec;
    }

    void launch(stream_ref s) const { TENET_CUDA_CHECK(cudaGraphLaunch(exec_, s.get())); }

    explicit operator bool() const noexcept { return exec_ != nullptr; }

private:
    cudaGraphExec_t exec_ = nullptr;
};

// Graphs per key (a trainer's: the step's input buffers and its phase).
// While enabled, the first sight of a key runs eagerly (the warm-up that
// creates plans and workspaces), the second captures, later ones replay;
// disabled, everything runs eagerly.
template <class Key>
class graph_cache {
public:
    void enable(bool on) { on_ = on; }
    bool enabled() const { return on_; }

    template <class F>
    void run(const Key& key, stream_ref s, F&& eager)
    {
        if (!on_) return eager();
        for (auto& e : entries_)
            if (e.key == key) {
                if (!e.graph) e.graph.capture(s, eager);
                e.graph.launch(s);
                return;
            }
        eager();
        entries_.push_back({key, cuda_graph{}});
    }

private:
    struct entry {
        Key key;
        cuda_graph graph;
    };
    bool on_ = false;
    std::vector<entry> entries_;
};

}  // namespace tenet::train
