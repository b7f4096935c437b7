// Observers: watch the tensors that flow through a model during calibration
// and conclude int8 quantization parameters for them.
//
//   min_max_observer<G>         the running min and max (PyTorch's MinMaxObserver)
//   moving_average_observer<G>  an exponential moving average of each batch's min
//                               and max (MovingAverageMinMaxObserver), so one odd
//                               batch moves the range only a little
//   percentile_observer         a histogram; the range between two percentiles,
//                               so that rare outliers are clipped
//   mse_observer                the same histogram; the range whose quantization
//                               error (clipping plus rounding) is smallest
//
// G is per_tensor or per_channel<Axis> (granularity.hpp); the histogram
// observers are per tensor. Every observer ends in choose_affine, so the
// parameters follow PyTorch's rules (qparams.hpp). Device tensors are reduced
// on the device and only their minima and maxima come back; the histogram
// observers copy the whole tensor back, since they bin on the host.
//
// observe(x, real_rows) leaves padding out: real_rows is a [Rows] mask (Rows:
// x's first extent, in x's place; nonzero: a real row, 0: padding), and
// whatever the padding rows hold is not seen, so a padded batch observes
// exactly what the batch of its real rows alone does. A tensor with no real
// value is not counted; a channel that has seen none reads min +inf and max
// -inf, and params() refuses it.
#pragma once

#include "../memory/error.hpp"
#include "../reduce/reduce.hpp"
#include "../tensor/copy.hpp"
#include "granularity.hpp"
#include "qparams.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tenet::quant {

// What an observer concludes: one scale and zero point per channel (one in
// all for per_tensor, whose axis is -1).
struct quant_params {
    std::vector<float> scale;
    std::vector<std::int32_t> zero_point;
    int axis = -1;
    scheme s{};

    affine at(std::size_t channel) const
    {
        if (channel >= scale.size())
            throw index_error("tenet: quant_params::at: channel " + std::to_string(channel) + " of " +
                              std::to_string(scale.size()));
        return {scale[channel], zero_point[channel]};
    }
};

namespace detail {

template <class X>
inline constexpr bool floating_tensor_v = is_floating_v<std::remove_const_t<typename X::element_type>>;

// Starts evaluating e, as f32, into out on the host: host memory at once;
// device memory on the device into a tensor, then one copy back on the
// current stream, which the caller synchronises before reading out.
template <class E>
void fetch(const E& e, std::vector<float>& out)
{
    using S = typename E::shape;
    using P = compute_place_t<typename E::place>;
    out.resize(S::numel);
    if constexpr (host_accessible_v<P>) {
        assign(make_view<S, Host>(out.data()), e);
    } else {
        Tensor<f32, S, P> values;  // freed in stream order, after the copy
        assign(values.view(), e);
        tenet::copy_bytes<Host, P>(out.data(), values.data(), sizeof(float) * S::numel, current_stream());
    }
}

template <class X>
void synchronize_for()
{
    if constexpr (!host_accessible_v<typename X::place>) current_stream().synchronize();
}

// A [Rows] mask of real rows, as f32 0 or 1 in X's place, viewed as
// [Rows, 1, ..., 1] of X's rank and broadcast over X.
template <class X>
class real_row_mask {
    using S = typename X::shape;
    using P = compute_place_t<typename X::place>;
    static constexpr std::size_t rows = S::extents[0];
    template <std::size_t... I>
    static auto column_shape(std::index_sequence<I...>) -> Shape<rows, (I * 0 + 1)...>;
    using column = decltype(column_shape(std::make_index_sequence<S::rank - 1>{}));

public:
    template <class R>
    explicit real_row_mask(const R& real_rows)
    {
        static_assert(S::rank >= 1, "tenet: observe(x, real_rows): x has no rows (a scalar)");
        static_assert(std::is_same_v<typename R::shape, Shape<rows>>,
                      "tenet: observe(x, real_rows): real_rows must be [Rows], one entry per row of x (its first extent)");
        assign(mask_.view(), cast<f32>(real_rows != 0));
    }
    // true where an element of X lies in a real row
    auto elements() const { return broadcast_to<S>(make_view<column, P>(mask_.data())) != 0; }
    // the mask on the host (synchronise for X before reading it)
    void fetch_to(std::vector<float>& out) const { fetch(mask_.view(), out); }

private:
    Tensor<f32, Shape<rows>, P> mask_;
};

// The minima (Max false) or maxima of x over every axis but G's channel axis
// (over all of them per tensor): one value per channel, as an expression.
template <class G, bool Max, class X>
auto channel_extremes(const X& x)
{
    constexpr std::size_t rank = X::shape::rank;
    constexpr int axis = G::axis;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
        if constexpr (axis >= 0 && sizeof...(I) == 0)
            return ::tenet::as_view(x);  // a vector per channel: each element is its own channel
        else if constexpr (Max)
            return ::tenet::max<(static_cast<int>(I) < axis ? static_cast<int>(I) : static_cast<int>(I) + 1)...>(x);
        else
            return ::tenet::min<(static_cast<int>(I) < axis ? static_cast<int>(I) : static_cast<int>(I) + 1)...>(x);
    }(std::make_index_sequence<(axis < 0 ? 0 : rank - 1)>{});
}

// What every observer reports: the range it saw (per channel) and how many
// tensors it was shown.
class observer_state {
public:
    const std::vector<float>& min() const noexcept { return min_; }
    const std::vector<float>& max() const noexcept { return max_; }
    std::size_t count() const noexcept { return count_; }

protected:
    observer_state(scheme s, const char* name) : scheme_(s), name_(name) {}

    void require_observations() const
    {
        if (count_ == 0) throw error(std::string("tenet: ") + name_ + "::params: it observed nothing");
    }
    quant_params params_for(const std::vector<float>& lo, const std::vector<float>& hi, int axis) const
    {
        quant_params p{{}, {}, axis, scheme_};
        for (std::size_t c = 0; c < lo.size(); ++c) {
            if (lo[c] > hi[c])
                throw error(std::string("tenet: ") + name_ + "::params: channel " + std::to_string(c) +
                            " observed no real value (every row it was shown was padding)");
            const affine a = choose_affine(lo[c], hi[c], scheme_);
            p.scale.push_back(a.scale);
            p.zero_point.push_back(a.zero_point);
        }
        return p;
    }
    void clear()
    {
        min_.clear();
        max_.clear();
        count_ = 0;
    }

    scheme scheme_;
    const char* name_;
    std::vector<float> min_, max_;
    std::size_t count_ = 0;
};

// The min-max observers: parameters straight from the running range, which
// Merge(min, max, batch_min, batch_max) moves, channel by channel.
template <class G, class Merge>
class range_observer : public observer_state {
public:
    // x: a Tensor or TensorView of a floating type, in any place;
    // real_rows: see the top of this file.
    template <class X>
    void observe(const X& x)
    {
        check_observed<X>();
        record_extremes<X>(channel_extremes<G, false>(x), channel_extremes<G, true>(x));
    }
    // Padding becomes +inf for the minima and -inf for the maxima, which no
    // real value loses to.
    template <class X, class R>
    void observe(const X& x, const R& real_rows)
    {
        check_observed<X>();
        const real_row_mask<X> real(real_rows);
        constexpr float inf = std::numeric_limits<float>::infinity();
        record_extremes<X>(channel_extremes<G, false>(where(real.elements(), x, inf)),
                           channel_extremes<G, true>(where(real.elements(), x, -inf)));
    }

    quant_params params() const
    {
        require_observations();
        return params_for(min_, max_, G::axis);
    }
    void reset() { clear(); }

protected:
    range_observer(scheme s, const char* name, Merge merge) : observer_state(s, name), merge_(merge) {}

private:
    template <class X>
    static void check_observed()
    {
        static_assert(floating_tensor_v<X>, "tenet: observers take tensors or views of a floating-point type");
        static_assert(std::is_same_v<G, per_tensor> || (G::axis >= 0 && G::axis < static_cast<int>(X::shape::rank)),
                      "tenet: per_channel<Axis>: Axis is not an axis of the observed tensor (0 .. rank - 1)");
    }

    // Each channel's first real values set its range; later ones go through
    // merge_. A channel whose batch minimum is not at most its maximum saw no
    // real value (or a NaN) and keeps its range.
    template <class X, class Lo, class Hi>
    void record_extremes(const Lo& batch_lo, const Hi& batch_hi)
    {
        std::vector<float> lo, hi;
        fetch(batch_lo, lo);
        fetch(batch_hi, hi);
        synchronize_for<X>();
        if (min_.empty()) {
            min_.assign(lo.size(), std::numeric_limits<float>::infinity());
            max_.assign(lo.size(), -std::numeric_limits<float>::infinity());
        }
        bool seen = false;
        for (std::size_t c = 0; c < lo.size(); ++c) {
            if (!(lo[c] <= hi[c])) continue;
            seen = true;
            if (min_[c] > max_[c]) min_[c] = lo[c], max_[c] = hi[c];  // its first real values
            else merge_(min_[c], max_[c], lo[c], hi[c]);
        }
        if (seen) ++count_;
    }

    Merge merge_;
};

// Counts of values in equal bins over the running [lo, hi] of everything
// added. A batch that widens the range re-bins the old counts into the new
// bins, each old bin's count spread over the new bins it overlaps in
// proportion to the overlap (the values inside a bin are taken as uniform),
// so counts may be fractional and the total is kept. NaN and infinities are
// not counted: they have no place on a finite range.
class histogram {
public:
    explicit histogram(std::size_t bins) : counts_(bins, 0.0)
    {
        if (bins == 0) throw error("tenet: histogram: it needs at least one bin");
    }

    void add(const float* values, std::size_t n)
    {
        double lo = std::numeric_limits<double>::infinity(), hi = -lo;
        for (std::size_t i = 0; i < n; ++i) {
            if (!std::isfinite(values[i])) continue;
            lo = std::min(lo, static_cast<double>(values[i]));
            hi = std::max(hi, static_cast<double>(values[i]));
        }
        if (lo > hi) return;  // nothing finite
        if (empty()) {
            lo_ = lo;
            hi_ = hi;
        } else if (lo < lo_ || hi > hi_) {
            widen(std::min(lo, lo_), std::max(hi, hi_));
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (!std::isfinite(values[i])) continue;
            counts_[bin_of(values[i])] += 1.0;
            total_ += 1.0;
        }
    }

    bool empty() const noexcept { return total_ == 0.0; }
    std::size_t bins() const noexcept { return counts_.size(); }
    const std::vector<double>& counts() const noexcept { return counts_; }
    double total() const noexcept { return total_; }
    double lo() const noexcept { return lo_; }
    double hi() const noexcept { return hi_; }
    double width() const noexcept { return (hi_ - lo_) / static_cast<double>(bins()); }
    double centre(std::size_t bin) const noexcept { return lo_ + (static_cast<double>(bin) + 0.5) * width(); }

    // The value below which a fraction q of the counts lie, interpolated
    // linearly inside its bin.
    double quantile(double q) const
    {
        const double target = q * total_;
        double below = 0;
        for (std::size_t b = 0; b < bins(); ++b) {
            const double c = counts_[b];
            if (c > 0 && below + c >= target)
                return lo_ + (static_cast<double>(b) + (target - below) / c) * width();
            below += c;
        }
        return hi_;
    }

    void clear()
    {
        std::fill(counts_.begin(), counts_.end(), 0.0);
        total_ = lo_ = hi_ = 0;
    }

private:
    // The bin holding v on [lo, hi] (hi itself in the last bin).
    static std::size_t bin_on(double v, double lo, double hi, std::size_t bins)
    {
        if (!(hi > lo)) return 0;
        const double position = (v - lo) / (hi - lo) * static_cast<double>(bins);
        return static_cast<std::size_t>(std::clamp(std::floor(position), 0.0, static_cast<double>(bins - 1)));
    }
    std::size_t bin_of(double v) const { return bin_on(v, lo_, hi_, bins()); }

    void widen(double lo, double hi)
    {
        std::vector<double> wider(bins(), 0.0);
        const double n = static_cast<double>(bins());
        const double old_width = width(), new_width = (hi - lo) / n;
        for (std::size_t b = 0; b < bins(); ++b) {
            const double c = counts_[b];
            if (c == 0) continue;
            if (old_width == 0) {  // every value so far was lo_
                wider[bin_on(lo_, lo, hi, bins())] += c;
                continue;
            }
            // the old bin in new-bin coordinates; it spans at most two new bins
            const double from = (lo_ + static_cast<double>(b) * old_width - lo) / new_width;
            const double to = from + old_width / new_width;
            for (double k = std::floor(from); k < to; k += 1) {
                const double overlap = std::min(to, k + 1) - std::max(from, k);
                wider[static_cast<std::size_t>(std::clamp(k, 0.0, n - 1))] += c * overlap / (to - from);
            }
        }
        counts_ = std::move(wider);
        lo_ = lo;
        hi_ = hi;
    }

    std::vector<double> counts_;
    double total_ = 0, lo_ = 0, hi_ = 0;
};

// The histogram observers: each tensor copied to the host and binned.
class histogram_observer : public observer_state {
public:
    template <class X>
    void observe(const X& x)
    {
        static_assert(floating_tensor_v<X>, "tenet: observers take tensors or views of a floating-point type");
        std::vector<float> values;
        fetch(x, values);
        synchronize_for<X>();
        add(values);
    }
    // The real rows alone, gathered on the host and binned as one tensor.
    template <class X, class R>
    void observe(const X& x, const R& real_rows)
    {
        static_assert(floating_tensor_v<X>, "tenet: observers take tensors or views of a floating-point type");
        const real_row_mask<X> real(real_rows);
        std::vector<float> values, rows;
        fetch(x, values);
        real.fetch_to(rows);
        synchronize_for<X>();
        const std::size_t per_row = values.size() / rows.size();
        std::size_t kept = 0;
        for (std::size_t r = 0; r < rows.size(); ++r) {
            if (rows[r] == 0) continue;
            std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(r * per_row), per_row,
                        values.begin() + static_cast<std::ptrdiff_t>(kept * per_row));
            ++kept;
        }
        values.resize(kept * per_row);
        add(values);
    }
    void reset()
    {
        clear();
        histogram_.clear();
    }

protected:
    histogram_observer(scheme s, const char* name, std::size_t bins) : observer_state(s, name), histogram_(bins) {}

    const histogram& observed() const
    {
        require_observations();
        return histogram_;
    }

private:
    // A tensor with no finite value is not counted.
    void add(const std::vector<float>& values)
    {
        const double before = histogram_.total();
        histogram_.add(values.data(), values.size());
        if (histogram_.total() == before) return;
        min_.assign(1, static_cast<float>(histogram_.lo()));
        max_.assign(1, static_cast<float>(histogram_.hi()));
        ++count_;
    }

    histogram histogram_;
};

struct widen_range {
    void operator()(float& lo, float& hi, float batch_lo, float batch_hi) const
    {
        lo = std::min(lo, batch_lo);
        hi = std::max(hi, batch_hi);
    }
};
struct average_range {
    float c;
    void operator()(float& lo, float& hi, float batch_lo, float batch_hi) const
    {
        lo += c * (batch_lo - lo);
        hi += c * (batch_hi - hi);
    }
};

}  // namespace detail

template <class Granularity = per_tensor>
class min_max_observer : public detail::range_observer<Granularity, detail::widen_range> {
public:
    explicit min_max_observer(scheme s = activation_scheme)
        : detail::range_observer<Granularity, detail::widen_range>(s, "min_max_observer", {})
    {
    }
};

template <class Granularity = per_tensor>
class moving_average_observer : public detail::range_observer<Granularity, detail::average_range> {
public:
    explicit moving_average_observer(scheme s = activation_scheme, float averaging_constant = 0.01f)
        : detail::range_observer<Granularity, detail::average_range>(s, "moving_average_observer",
                                                                     {checked(averaging_constant)})
    {
    }

private:
    static float checked(float c)
    {
        if (!(c > 0.0f && c <= 1.0f))
            throw error("tenet: moving_average_observer: the averaging constant must be in (0, 1], not " +
                        std::to_string(c));
        return c;
    }
};

class percentile_observer : public detail::histogram_observer {
public:
    explicit percentile_observer(scheme s = activation_scheme, double percentile = 99.99, std::size_t bins = 2048)
        : histogram_observer(s, "percentile_observer", bins), percentile_(percentile)
    {
        if (!(percentile >= 50.0 && percentile <= 100.0))
            throw error("tenet: percentile_observer: the percentile must be in [50, 100], not " +
                        std::to_string(percentile));
    }

    // The range from the (100 - p)th to the pth percentile.
    quant_params params() const
    {
        const detail::histogram& h = observed();
        const double p = percentile_ / 100.0;
        return params_for({static_cast<float>(h.quantile(1.0 - p))}, {static_cast<float>(h.quantile(p))}, -1);
    }

private:
    double percentile_;
};

class mse_observer : public detail::histogram_observer {
public:
    explicit mse_observer(scheme s = activation_scheme, std::size_t bins = 2048)
        : histogram_observer(s, "mse_observer", bins)
    {
    }

    // Every range whose ends are bin edges (lo moved up and hi moved down,
    // while they stay on their side of 0, to which the range widens anyway)
    // is tried; the parameters with the least expected error win. Prefix
    // sums make each try O(1): at most (bins / 2)^2 of them.
    quant_params params() const
    {
        const detail::histogram& h = observed();
        if (!(h.width() > 0)) return params_for(min_, max_, -1);  // one value, seen again and again
        const error_model model(h, scheme_);
        affine best = choose_affine(static_cast<float>(h.lo()), static_cast<float>(h.hi()), scheme_);
        double least = model(best);
        const std::size_t n = h.bins();
        for (std::size_t i = 0; i < n; ++i) {
            const double lo = h.lo() + static_cast<double>(i) * h.width();
            if (i > 0 && lo >= 0) break;
            for (std::size_t j = 0; i + j < n; ++j) {
                const double hi = h.hi() - static_cast<double>(j) * h.width();
                if (j > 0 && hi <= 0) break;
                const affine candidate = choose_affine(static_cast<float>(lo), static_cast<float>(hi), scheme_);
                const double e = model(candidate);
                if (e < least) least = e, best = candidate;
            }
        }
        return {{best.scale}, {best.zero_point}, -1, scheme_};
    }

private:
    // The expected squared error of quantizing the histogram's contents (each
    // bin's count at its centre): values outside the representable range
    // [(qmin - zp) s, (qmax - zp) s] are clipped to its ends; values inside
    // round, with error s^2 / 12 (uniform over a step).
    class error_model {
    public:
        error_model(const detail::histogram& h, scheme s)
            : lo_(h.lo()), width_(h.width()), qmin_(s.qmin()), qmax_(s.qmax()), n_(h.bins() + 1), x_(h.bins() + 1),
              xx_(h.bins() + 1)
        {
            for (std::size_t b = 0; b < h.bins(); ++b) {
                const double c = h.counts()[b], x = h.centre(b);
                n_[b + 1] = n_[b] + c;
                x_[b + 1] = x_[b] + c * x;
                xx_[b + 1] = xx_[b] + c * x * x;
            }
        }

        double operator()(affine a) const
        {
            const double s = a.scale, low = (qmin_ - a.zero_point) * s, high = (qmax_ - a.zero_point) * s;
            // bins [0, below) have centres below low; bins [above, end) above high
            const std::size_t below = bin_bound(std::ceil((low - lo_) / width_ - 0.5));
            const std::size_t above = std::max(below, bin_bound(std::floor((high - lo_) / width_ - 0.5) + 1));
            return clipped(0, below, low) + clipped(above, n_.size() - 1, high) + (n_[above] - n_[below]) * s * s / 12;
        }

    private:
        std::size_t bin_bound(double b) const
        {
            return static_cast<std::size_t>(std::clamp(b, 0.0, static_cast<double>(n_.size() - 1)));
        }
        // sum over bins [from, to) of count * (centre - edge)^2
        double clipped(std::size_t from, std::size_t to, double edge) const
        {
            const double n = n_[to] - n_[from], x = x_[to] - x_[from], xx = xx_[to] - xx_[from];
            return std::max(0.0, xx - 2 * edge * x + edge * edge * n);
        }

        double lo_, width_, qmin_, qmax_;
        std::vector<double> n_, x_, xx_;  // prefix sums of count, count * centre, count * centre^2
    };
};

}  // namespace tenet::quant
