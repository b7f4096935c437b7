// Early stopping on a validation metric, on the host, as Keras and Lightning
// do it: an epoch improves when its metric beats the best so far by more
// than min_delta (absolute); training stops once `patience` epochs in a row
// have not improved. The best starts at +-infinity; a NaN metric never
// improves (every comparison with it is false). Trivially copyable, so
// a checkpoint can save it as bytes.
#pragma once

#include "../config.hpp"
#include "../memory/error.hpp"

#include <cmath>
#include <cstddef>
#include <limits>

namespace tenet::train {

class early_stopping {
public:
    enum class mode { minimize, maximize };

    early_stopping(std::size_t patience, double min_delta, mode m)
        : patience_(patience), min_delta_(min_delta), mode_(m),
          best_(m == mode::minimize ? std::numeric_limits<double>::infinity()
                                    : -std::numeric_limits<double>::infinity())
    {
        if (!(min_delta >= 0 && std::isfinite(min_delta)))
            throw error("tenet: early_stopping: min_delta must be finite and >= 0");
    }

    // Records the metric of the next epoch; true when training should stop.
    bool update(double metric)
    {
        if (improves(metric)) {
            best_ = metric;
            best_epoch_ = epochs_;
            without_improvement_ = 0;
        } else {
            ++without_improvement_;
        }
        ++epochs_;
        return should_stop();
    }

    bool should_stop() const { return without_improvement_ > 0 && without_improvement_ >= patience_; }
    // Before the first update: +inf when minimizing, -inf when maximizing.
    double best() const { return best_; }
    // The 0-based number of the update that gave best() (0 before any).
    std::size_t best_epoch() const { return best_epoch_; }
    std::size_t epochs_without_improvement() const { return without_improvement_; }
    std::size_t epochs() const { return epochs_; }

private:
    bool improves(double metric) const
    {
        return mode_ == mode::minimize ? metric < best_ - min_delta_ : metric > best_ + min_delta_;
    }

    std::size_t patience_;
    double min_delta_;
    mode mode_;
    double best_;
    std::size_t best_epoch_ = 0;
    std::size_t without_improvement_ = 0;
    std::size_t epochs_ = 0;
};

}  // namespace tenet::train
