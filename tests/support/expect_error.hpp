// The check every argument-rule test makes: the call throws
// Error(invalid_argument) whose message leads with the argument's name
// ("invalid argument: <argument>: ...") and states the rule (`phrase`).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "asynctp/error.hpp"

namespace asynctp_test {

template <typename Call>
void expect_invalid_argument(Call call, const std::string& argument, const std::string& phrase) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected rejection of " << argument << " (" << phrase << ")";
  } catch (const asynctp::Error& e) {
    EXPECT_EQ(e.code(), asynctp::ErrorCode::invalid_argument) << e.what();
    const std::string message = e.what();
    EXPECT_NE(message.find("invalid argument: " + argument + ": "), std::string::npos)
        << "message does not lead with the argument '" << argument << "': " << message;
    EXPECT_NE(message.find(phrase), std::string::npos)
        << "message lacks '" << phrase << "': " << message;
  }
}

}  // namespace asynctp_test
