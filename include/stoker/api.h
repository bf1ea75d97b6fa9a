// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The public C++ API of Stoker in one include: what an embedder needs to configure a loader,
// read its batches and watch its counters (library stoker_core). Serving it over Arrow Flight
// is stoker/flight_service.h, in library stoker_serve, which links Flight.
// Each header says where in src/ it is implemented.
#pragma once

#include "stoker/batch_stream.h"
#include "stoker/cpu_budget.h"
#include "stoker/error.h"
#include "stoker/loader.h"
#include "stoker/options.h"
#include "stoker/plan_version.h"
#include "stoker/resume.h"
#include "stoker/stats.h"
#include "stoker/storage_options.h"
#include "stoker/stream_identity.h"
#include "stoker/transform_options.h"
