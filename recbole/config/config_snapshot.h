#pragma once
// The effective config as one YAML map (key: value, every key), as checkpoints store it: the
// resume checkpoint compares it with a resumed run's (trainer/resume_checkpoint.h), and the
// serving section keeps it so that a served model is rebuilt with its run's values.
#include <string>

namespace recbole::config {

class Config;

std::string config_snapshot(const Config& config);

}  // namespace recbole::config
