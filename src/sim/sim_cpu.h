// The simulator for host tests and pmulab-sim, in one include: the logical processor
// (sim_core.h, which documents what is modelled and the sources), its PMU families
// (sim_pmu.h), the machine (sim_machine.h) and the builders of documented machines
// (sim_builders.h). docs/sim.md, "How the simulator is organised", says where what goes.
#pragma once

#include "sim/sim_builders.h"
#include "sim/sim_core.h"
#include "sim/sim_machine.h"
