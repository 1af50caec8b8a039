#pragma once
// Errors a user can act on. The library throws; only the tools catch, print and exit.
// Messages are compiler-style: "<where>: <what was expected>, got <what was found>", where
// <where> is "file:line" for files, "--key" for the command line, or a config key.
#include <stdexcept>
#include <string>

namespace recbole {

// Base of every error the library raises on bad input or bad configuration.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration key or value is unknown or invalid.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// An atomic file, a dataset folder or a download is missing or malformed.
class DataError : public Error {
 public:
  using Error::Error;
};

// A tensor was found on the wrong device, or a device was asked for that cannot be used.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// A distributed rendezvous, collective or peer failed or timed out.
class DistError : public Error {
 public:
  using Error::Error;
};

// What a loaded model cannot do (serving: recommend_from_history for a factor model, a context
// model that reads interaction-side fields).
class NotSupportedError : public Error {
 public:
  using Error::Error;
};

}  // namespace recbole
