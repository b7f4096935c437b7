// Writes a known set of scalars with profile::tensorboard_writer into the
// directory given (read_back.py checks them with TensorBoard's own reader)
// and prints the file's path.
#include <tenet/profile/tensorboard.hpp>

#include <cstdio>

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s LOG_DIR\n", argv[0]);
        return 2;
    }
    tenet::profile::tensorboard_writer log(argv[1]);
    for (int step = 0; step < 50; ++step) {
        log.scalar("train/loss", 2.0 / (1 + step), step);
        log.scalar("train/lr", 1e-3 * step, step);
        if (step % 10 == 0) log.scalar("test/accuracy", 0.5 + step / 100.0, step);
    }
    std::printf("%s\n", log.path().c_str());
}
