// Option resolution: Options set in code win over the ASYNCTP_* environment,
// which wins over the defaults; every bad value is rejected with a message
// naming the option or variable. The environment is faked so these tests
// never depend on (or change) the real process environment.
#include "core/config.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "asynctp/error.hpp"
#include "support/printers.hpp"

namespace asynctp::core {
namespace {

EnvLookup fake_env(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

void expect_invalid(const Options& options, const EnvLookup& env, const std::string& name,
                    const std::string& phrase) {
  try {
    resolve_options(options, env);
    ADD_FAILURE() << "accepted; expected an error naming " << name;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
    const std::string message = e.what();
    EXPECT_NE(message.find(name + ":"), std::string::npos) << message;
    EXPECT_NE(message.find(phrase), std::string::npos) << message;
  }
}

TEST(Config, Defaults) {
  const ResolvedOptions r = resolve_options({}, fake_env({}));
  EXPECT_EQ(r.algorithm, Algorithm::automatic);
  EXPECT_FALSE(r.algorithm_forced);
  EXPECT_EQ(r.wait_timeout_ms, kDefaultWaitTimeoutMs);
  EXPECT_EQ(r.wait_timeout_ms, 60000);
  EXPECT_FALSE(r.tile_m.has_value());
  EXPECT_FALSE(r.tile_n.has_value());
}

TEST(Config, AlgoFromEnvironment) {
  const std::pair<const char*, Algorithm> cases[] = {{"auto", Algorithm::automatic},
                                                     {"native", Algorithm::native},
                                                     {"pipelined", Algorithm::pipelined},
                                                     {"decomposed", Algorithm::decomposed}};
  for (auto [text, algorithm] : cases) {
    SCOPED_TRACE(text);
    const ResolvedOptions r = resolve_options({}, fake_env({{"ASYNCTP_ALGO", text}}));
    EXPECT_EQ(r.algorithm, algorithm);
    EXPECT_EQ(r.algorithm_forced, algorithm != Algorithm::automatic);
    EXPECT_STREQ(to_string(algorithm), text);  // the names round-trip
  }
}

TEST(Config, InvalidAlgoNamesTheVariableAndTheChoices) {
  for (const char* text : {"fast", "Native", "NATIVE", "", " native", "native ", "automatic"}) {
    SCOPED_TRACE(std::string("'") + text + "'");
    expect_invalid({}, fake_env({{"ASYNCTP_ALGO", text}}), "ASYNCTP_ALGO",
                   "must be one of auto, native, pipelined, decomposed");
  }
  // parse_algorithm names whatever the caller says it parsed (e.g. a flag).
  try {
    parse_algorithm("x", "--algo");
    ADD_FAILURE() << "accepted 'x'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--algo: must be one of"), std::string::npos);
  }
}

TEST(Config, NativeTailFromOptionsThenEnvironment) {
  EXPECT_EQ(resolve_options({}, fake_env({})).native_tail, NativeTail::automatic);
  const std::pair<const char*, NativeTail> cases[] = {{"auto", NativeTail::automatic},
                                                      {"kernel", NativeTail::kernel},
                                                      {"library", NativeTail::library}};
  for (auto [text, tail] : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(resolve_options({}, fake_env({{"ASYNCTP_NATIVE_TAIL", text}})).native_tail, tail);
    EXPECT_STREQ(to_string(tail), text);
  }
  Options options;
  options.native_tail = NativeTail::kernel;
  EXPECT_EQ(resolve_options(options, fake_env({{"ASYNCTP_NATIVE_TAIL", "library"}})).native_tail,
            NativeTail::kernel);
  for (const char* text : {"", "Library", "cublas", "auto "}) {
    SCOPED_TRACE(std::string("'") + text + "'");
    expect_invalid({}, fake_env({{"ASYNCTP_NATIVE_TAIL", text}}), "ASYNCTP_NATIVE_TAIL",
                   "must be one of auto, kernel, library");
  }
}

TEST(Config, TuneOptionOverridesTheEnvironment) {
  Options on;
  on.tune = true;
  Options off;
  off.tune = false;
  EXPECT_TRUE(resolve_options(on, fake_env({})).tune);
  EXPECT_TRUE(resolve_options(on, fake_env({{"ASYNCTP_TUNE", "off"}})).tune);
  EXPECT_FALSE(resolve_options(off, fake_env({{"ASYNCTP_TUNE", "on"}})).tune);
  // The option set, the environment is not read: not even to refuse it.
  EXPECT_FALSE(resolve_options(off, fake_env({{"ASYNCTP_TUNE", "yes"}})).tune);
}

TEST(Config, TuneIsOffUnlessTheEnvironmentSaysOn) {
  EXPECT_FALSE(resolve_options({}, fake_env({})).tune);
  EXPECT_FALSE(resolve_options({}, fake_env({{"ASYNCTP_TUNE", "off"}})).tune);
  EXPECT_TRUE(resolve_options({}, fake_env({{"ASYNCTP_TUNE", "on"}})).tune);
  for (const char* text : {"", "1", "ON", "yes"}) {
    SCOPED_TRACE(std::string("'") + text + "'");
    expect_invalid({}, fake_env({{"ASYNCTP_TUNE", text}}), "ASYNCTP_TUNE", "must be 'on' or 'off'");
  }
}

TEST(Config, OptionsOverrideEnvironment) {
  Options options;
  options.algorithm = Algorithm::pipelined;
  options.wait_timeout_ms = 123;
  options.tile_m = 64;
  options.tile_n = 32;
  const auto env = fake_env({{"ASYNCTP_ALGO", "native"},
                             {"ASYNCTP_WAIT_TIMEOUT_MS", "5000"},
                             {"ASYNCTP_TILE_M", "128"},
                             {"ASYNCTP_TILE_N", "256"}});
  const ResolvedOptions r = resolve_options(options, env);
  EXPECT_EQ(r.algorithm, Algorithm::pipelined);
  EXPECT_TRUE(r.algorithm_forced);
  EXPECT_EQ(r.wait_timeout_ms, 123);
  EXPECT_EQ(r.tile_m, 64);
  EXPECT_EQ(r.tile_n, 32);
  // Without the options the same environment applies.
  const ResolvedOptions e = resolve_options({}, env);
  EXPECT_EQ(e.algorithm, Algorithm::native);
  EXPECT_EQ(e.wait_timeout_ms, 5000);
  EXPECT_EQ(e.tile_m, 128);
  EXPECT_EQ(e.tile_n, 256);
  // Explicitly asking for auto in code also beats a forced environment.
  Options automatic;
  automatic.algorithm = Algorithm::automatic;
  EXPECT_EQ(resolve_options(automatic, env).algorithm, Algorithm::automatic);
  EXPECT_FALSE(resolve_options(automatic, env).algorithm_forced);
}

TEST(Config, OptionsSetInCodeMakeTheEnvironmentIrrelevant) {
  // A broken environment variable cannot fail a call whose options already
  // decide that setting.
  Options options;
  options.algorithm = Algorithm::decomposed;
  options.wait_timeout_ms = 10;
  const ResolvedOptions r = resolve_options(
      options, fake_env({{"ASYNCTP_ALGO", "bogus"}, {"ASYNCTP_WAIT_TIMEOUT_MS", "abc"}}));
  EXPECT_EQ(r.algorithm, Algorithm::decomposed);
  EXPECT_EQ(r.wait_timeout_ms, 10);
}

TEST(Config, WaitTimeoutFromEnvironment) {
  EXPECT_EQ(resolve_options({}, fake_env({{"ASYNCTP_WAIT_TIMEOUT_MS", "250"}})).wait_timeout_ms,
            250);
  EXPECT_EQ(resolve_options({}, fake_env({{"ASYNCTP_WAIT_TIMEOUT_MS", "1"}})).wait_timeout_ms, 1);
  for (const char* text : {"abc", "0", "-5", "10x", "", "1.5", "0x10", "99999999999999999999"}) {
    SCOPED_TRACE(std::string("'") + text + "'");
    expect_invalid({}, fake_env({{"ASYNCTP_WAIT_TIMEOUT_MS", text}}), "ASYNCTP_WAIT_TIMEOUT_MS",
                   std::string("must be a positive integer, got '") + text + "'");
  }
}

TEST(Config, WaitTimeoutFromOptionsMustBePositive) {
  for (std::int64_t value : {0, -1, -60000}) {
    Options options;
    options.wait_timeout_ms = value;
    expect_invalid(options, fake_env({}), "options.wait_timeout_ms", "must be a positive integer");
  }
}

TEST(Config, TileSizesFromEnvironment) {
  for (const char* name : {"ASYNCTP_TILE_M", "ASYNCTP_TILE_N"}) {
    SCOPED_TRACE(name);
    const bool is_m = std::string(name) == "ASYNCTP_TILE_M";
    for (std::int64_t good : {8, 64, 136, 4096}) {
      const auto r = resolve_options({}, fake_env({{name, std::to_string(good)}}));
      EXPECT_EQ(is_m ? r.tile_m : r.tile_n, good);
      EXPECT_FALSE(is_m ? r.tile_n.has_value() : r.tile_m.has_value());
    }
    for (const char* bad : {"12", "4", "4104", "8192"}) {
      expect_invalid({}, fake_env({{name, bad}}), name, "multiple of 8 and at most 4096");
    }
    for (const char* bad : {"0", "-8", "abc", "16x"}) {
      expect_invalid({}, fake_env({{name, bad}}), name, "must be a positive integer");
    }
  }
}

TEST(Config, TileSizesFromOptions) {
  Options m;
  m.tile_m = 20;
  expect_invalid(m, fake_env({}), "options.tile_m", "multiple of 8 and at most 4096");
  Options n;
  n.tile_n = 4112;
  expect_invalid(n, fake_env({}), "options.tile_n", "multiple of 8 and at most 4096");
  Options zero;
  zero.tile_n = 0;
  expect_invalid(zero, fake_env({}), "options.tile_n", "must be a positive integer");
  Options good;
  good.tile_m = 16;
  const auto r = resolve_options(good, fake_env({{"ASYNCTP_TILE_N", "24"}}));
  EXPECT_EQ(r.tile_m, 16);
  EXPECT_EQ(r.tile_n, 24);  // options and environment combine per setting
}

TEST(Config, ParsePositiveInt) {
  EXPECT_EQ(parse_positive_int("42", "X"), 42);
  EXPECT_EQ(parse_positive_int("9223372036854775807", "X"), INT64_MAX);
  for (const char* bad : {"", "0", "-1", "4 2", "1e3", "x1"}) {
    SCOPED_TRACE(bad);
    try {
      parse_positive_int(bad, "THE_SETTING");
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("THE_SETTING: must be a positive integer"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace asynctp::core
