// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
// The public C++ API of Stoker in one include.
#pragma once

#include "stoker/batch_stream.h"
#include "stoker/column_types.h"
#include "stoker/digest.h"
#include "stoker/disk_cache.h"
#include "stoker/error.h"
#include "stoker/flight_service.h"
#include "stoker/loader.h"
#include "stoker/manifest.h"
#include "stoker/options.h"
#include "stoker/permutation.h"
#include "stoker/plan.h"
#include "stoker/row_filter.h"
#include "stoker/source.h"
#include "stoker/stats.h"
#include "stoker/storage.h"
#include "stoker/transform.h"
