// The example's host training (see training.hpp and active_learning.hpp),
// compiled by the C++ compiler in every build.
#include "active_learning.hpp"

namespace example {

std::vector<result> train_on_host(const data::mnist_dataset& set, const options& o) { return train_all<Host>(set, o); }

// --lr-find, for each model asked for, on the host; the CSV written whole or not at all.
void find_learning_rates(const data::mnist_dataset& set, const options& o)
{
    std::ostringstream csv;
    csv << "model,lr,loss,smoothed\n";
    if (o.model == "vit" || o.model == "all") find_learning_rate<vit>(set, o, csv);
    if (o.model == "cnn" || o.model == "all") find_learning_rate<cnn>(set, o, csv);
    if (o.model == "mlp" || o.model == "all") find_learning_rate<mlp>(set, o, csv);
    const std::string text = csv.str();
    io::atomic_file file(o.lr_find_csv);
    file.write(reinterpret_cast<const std::byte*>(text.data()), text.size());
    file.commit();
    std::printf("wrote %s\n", o.lr_find_csv.c_str());
}

std::vector<curve> active_learning_on_host(const data::mnist_dataset& set, const options& o)
{
    return active_learning<Host>(set, o);
}

}  // namespace example
