// The argument parsing that `tilec run` and `tilec opt` share: help on standard output,
// and errors worded like the main command's, with a usage line when the input is missing.
#pragma once
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace tilec::driver {

// Makes each use of a repeatable option take one value: CLI11 lets a vector option take
// every argument up to the next option, so `tilec -I dir k.tile -o k.o` would read k.tile
// as a second directory and find no input file. Call it after the options are added.
inline void one_value_per_use(CLI::App& app) {
    for (CLI::Option* opt : app.get_options())
        if (!opt->get_positional()) opt->allow_extra_args(false);
}

// Parses `args` (in CLI11's reversed order) into `app`. Returns the exit status when the
// command ends here (0 after --help, 1 after an error, which names `command`'s --help),
// nullopt to go on. `usage` is the message when `input` (bound to the input option) is
// still empty after a missing-argument error.
inline std::optional<int> parse_subcommand(CLI::App& app, std::vector<std::string> args, const std::string& command,
                                           const std::string& input, const std::string& usage) {
    one_value_per_use(app);
    try {
        app.parse(args);
    } catch (const CLI::CallForHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::CallForAllHelp&) {
        std::cout << app.help();
        return 0;
    } catch (const CLI::ParseError& e) {
        std::cerr << "tilec: error: "
                  << (input.empty() && dynamic_cast<const CLI::RequiredError*>(&e) ? usage : std::string(e.what()))
                  << "\nRun 'tilec " << command << " --help' for the options.\n";
        return 1;
    }
    return std::nullopt;
}

}  // namespace tilec::driver
