// mode_scope: a model in training or evaluation mode for one scope, and back
// in the mode it found when the scope ends, by return or by exception. Every
// tenet function that switches a model's mode does so through one, so no
// call leaves a model in a mode its caller did not choose.
//
//   {
//       nn::mode_scope evaluating(net, nn::mode::evaluation);
//       net.forward(x);          // running statistics, no dropout
//   }                            // net is back in the mode it was in
#pragma once

namespace tenet::nn {

enum class mode { training, evaluation };

template <class Model>
class mode_scope {
public:
    mode_scope(Model& model, mode m) : model_(model), was_training_(model.training())
    {
        model_.train(m == mode::training);
    }
    ~mode_scope() { model_.train(was_training_); }

    mode_scope(const mode_scope&) = delete;
    mode_scope& operator=(const mode_scope&) = delete;

private:
    Model& model_;
    bool was_training_;
};

}  // namespace tenet::nn
