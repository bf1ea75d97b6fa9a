// Copyright Stoker authors. Licensed under the Apache License, Version 2.0.
#include "mixture/mixture_streams.h"

#include <algorithm>
#include <utility>

#include "mixture/padded_stream.h"
#include "stoker/options.h"

namespace stoker {

arrow::Result<std::shared_ptr<const MixtureStreams>> MixtureStreams::Make(
    std::shared_ptr<const MixtureConfig> config, MixtureSharing sharing,
    std::shared_ptr<MixtureTally> tally) {
  if (config == nullptr || config->sources.empty() || config->plan == nullptr) {
    return arrow::Status::Invalid("a mixture's streams need its config");
  }
  if (sharing.batch_size != config->batch_size || sharing.drop_last != config->drop_last) {
    return arrow::Status::Invalid("a mixture's sharing must cut the batches its config does");
  }
  if (sharing.pad_to_equal_steps && !sharing.exactly_once) {
    return arrow::Status::Invalid(
        "pad_to_equal_steps needs mode='eval' (training ranks already have equal steps)");
  }
  std::shared_ptr<arrow::Schema> schema = config->sources.front()->schema();
  if (sharing.pad_to_equal_steps) {
    ARROW_ASSIGN_OR_RAISE(schema,
                          schema->AddField(schema->num_fields(),
                                           arrow::field(kValidColumn, arrow::boolean(), false)));
  }
  return std::shared_ptr<const MixtureStreams>(
      new MixtureStreams(std::move(config), sharing, std::move(tally), std::move(schema)));
}

MixtureStreams::MixtureStreams(std::shared_ptr<const MixtureConfig> config, MixtureSharing sharing,
                               std::shared_ptr<MixtureTally> tally,
                               std::shared_ptr<arrow::Schema> schema)
    : config_(std::move(config)),
      sharing_(sharing),
      tally_(std::move(tally)),
      schema_(std::move(schema)) {}

arrow::Result<std::pair<EpochPlan, std::vector<int64_t>>> MixtureStreams::PlanStream(
    const LoaderImpl::StreamSpec& spec) const {
  ARROW_RETURN_NOT_OK(spec.Validate());
  if (spec.chunk_rows > 0) {
    return arrow::Status::Invalid(
        "a mixture's streams are shared in chunks of batches, not of windows (chunk_rows ",
        spec.chunk_rows, "): its sources' windows are not the mixture's");
  }
  // The positions as one unit, in order: the plan's sharing rule without a shuffle of its own
  // (the mixture's plan and the sources' engines shuffle).
  PlanConfig plan_config;
  plan_config.shuffle = false;
  plan_config.window_rows = std::max<int64_t>(1, num_rows());
  plan_config.epoch = spec.epoch;
  plan_config.rank = spec.rank;
  plan_config.world_size = spec.world_size;
  plan_config.resumed = spec.resumed;
  plan_config.batch_size = sharing_.batch_size;
  plan_config.drop_last = sharing_.drop_last;
  plan_config.exactly_once = sharing_.exactly_once;
  plan_config.pad_to_equal_steps = sharing_.pad_to_equal_steps;
  ARROW_ASSIGN_OR_RAISE(auto plan, EpochPlan::Make({num_rows()}, plan_config));
  std::vector<int64_t> batches = spec.Batches(plan.num_batches());
  return std::make_pair(std::move(plan), std::move(batches));
}

arrow::Result<std::unique_ptr<BatchStream>> MixtureStreams::StartStream(
    const LoaderImpl::StreamSpec& spec) const {
  ARROW_ASSIGN_OR_RAISE(auto planned, PlanStream(spec));
  const EpochPlan& plan = planned.first;
  const int64_t batch_size = sharing_.batch_size;
  // The selected batches' real positions, in order: every batch but the rank's last holds
  // batch_size rows, so the MixtureStream cuts them where the plan does.
  std::vector<Segment> segments;
  std::vector<int64_t> real_rows;
  for (const int64_t b : planned.second) {
    const int64_t first = std::min(b * batch_size, plan.real_rows());
    const int64_t last = std::min((b + 1) * batch_size, plan.real_rows());
    real_rows.push_back(last - first);
    if (first == last) continue;
    for (const Segment& s : SliceSegments(plan.segments(), first, last)) {
      if (!segments.empty() && segments.back().end == s.begin) {
        segments.back().end = s.end;
      } else {
        segments.push_back(s);
      }
    }
  }
  ARROW_ASSIGN_OR_RAISE(std::unique_ptr<BatchStream> stream,
                        MixtureStream::Make(config_, spec.epoch, std::move(segments), tally_));
  if (!sharing_.pad_to_equal_steps) return stream;
  // The row padding copies: the position the plan pads with, read on its own when needed (so
  // that every server of a share pads with the same row), not counted as delivered.
  const int64_t pad_position =
      plan.rank_rows() > plan.real_rows() ? plan.Position(plan.real_rows()) : -1;
  auto pad_row = [config = config_, epoch = spec.epoch,
                  pad_position]() -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
    if (pad_position < 0) return arrow::Status::Invalid("this rank's batches need no padding");
    ARROW_ASSIGN_OR_RAISE(
        auto one, MixtureStream::Make(config, epoch, {{pad_position, pad_position + 1}}, nullptr));
    return one->Next();
  };
  return PaddedStream::Make(std::move(stream), std::move(real_rows), batch_size, std::move(pad_row),
                            config_->pool);
}

}  // namespace stoker
