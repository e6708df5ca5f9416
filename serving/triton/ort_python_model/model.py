"""Triton Python-backend model running ONNX Runtime: the comparison beside the onyx backend
(docs/serving.md). The version directory holds this file and model.onnx; config.pbtxt's
parameter "threads" sets ORT's intra-op threads (0 = ORT's default). With max_batch_size > 0,
the requests Triton hands over together with equal shapes past dim 0 run as one batch."""
import json
import os

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v.get("string_value", "") for k, v in config.get("parameters", {}).items()}
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(params.get("threads", "0") or 0)
        options.inter_op_num_threads = 1
        path = os.path.join(args["model_repository"], args["model_version"], "model.onnx")
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]
        self.batching = int(config.get("max_batch_size", 0)) > 0

    def _run(self, feeds_list):
        """Runs the requests' feeds (dicts of arrays) as one batch; returns each one's outputs."""
        if len(feeds_list) == 1:
            return [self.session.run(self.outputs, feeds_list[0])]
        feeds = {n: np.concatenate([f[n] for f in feeds_list]) for n in self.inputs}
        results = self.session.run(self.outputs, feeds)
        rows = np.cumsum([0] + [len(f[self.inputs[0]]) for f in feeds_list])
        return [[r[rows[i]:rows[i + 1]] for r in results] for i in range(len(feeds_list))]

    def execute(self, requests):
        feeds_list, errors = [], {}
        for k, request in enumerate(requests):
            feeds = {}
            for name in self.inputs:
                tensor = pb_utils.get_input_tensor_by_name(request, name)
                if tensor is None:
                    errors[k] = f"missing input '{name}'"
                    break
                feeds[name] = tensor.as_numpy()
            feeds_list.append(feeds)
        groups = {}
        for k, feeds in enumerate(feeds_list):
            if k in errors:
                continue
            key = tuple((n, feeds[n].dtype.str, feeds[n].shape[1:] if self.batching else feeds[n].shape) for n in self.inputs)
            groups.setdefault(key, []).append(k)
        outputs = {}
        for members in groups.values():
            try:
                for k, out in zip(members, self._run([feeds_list[k] for k in members])):
                    outputs[k] = out
            except Exception as e:  # noqa: BLE001 - the request's error goes back to the client
                for k in members:
                    errors[k] = str(e)
        responses = []
        for k in range(len(requests)):
            if k in errors:
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(errors[k])))
            else:
                responses.append(pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor(n, np.ascontiguousarray(v)) for n, v in zip(self.outputs, outputs[k])]))
        return responses
