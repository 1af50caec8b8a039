// placeholder until the config implementation lands
#include "recbole/config/config.h"
