# source: https://github.com/Jaykef/ai-algorithms/issues/4
# grpo_multimodal_reasoner.ipynb loads the policy with
# `AutoModelForVision2Seq.from_pretrained(model_name, torch_dtype=torch.float16).to(device)` and
# hands it to GRPOTrainer(model, tokenizer, reward_funcs, config, dataset, processor), whose
# __init__ builds AdamW over model.parameters() and `self.scaler = torch.amp.GradScaler(...)` on
# CUDA; train() runs `self.scaler.scale(loss).backward()` and, every accumulation step,
# `self.scaler.unscale_(self.optimizer)`, clip, `self.scaler.step(...)`, `self.scaler.update()`.
# The weights (hence the gradients) are float16: "ValueError: Attempting to unscale FP16
# gradients." (needs a Hugging Face download and a GPU)
# fixture: static
import torch
from torch.optim import AdamW
from transformers import AutoModelForCausalLM, AutoTokenizer


class GRPOConfig:
    def __init__(self, learning_rate=5e-6, weight_decay=0.01, gradient_accumulation_steps=1, max_steps=20,
                 num_train_epochs=1, bf16=True, device="cuda"):
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.max_steps = max_steps
        self.num_train_epochs = num_train_epochs
        self.bf16 = bf16
        self.device = device


class GRPOTrainer:
    def __init__(self, model, tokenizer, config, prompts):
        self.model = model
        self.tokenizer = tokenizer
        self.config = config
        self.prompts = prompts
        self.optimizer = AdamW(self.model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
        self.step = 0
        self.scaler = torch.amp.GradScaler(enabled=config.bf16 and config.device.startswith("cuda")) if config.device.startswith("cuda") else None

    def compute_loss(self, input_ids):
        out = self.model(input_ids=input_ids, labels=input_ids)
        return out.loss

    def train(self):
        self.model.train()
        for epoch in range(self.config.num_train_epochs):
            for batch_idx, prompt in enumerate(self.prompts):
                if self.step >= self.config.max_steps:
                    break
                inputs = self.tokenizer(prompt, return_tensors="pt")
                inputs = {k: v.to(self.config.device) for k, v in inputs.items()}
                with torch.autocast(device_type=self.config.device, enabled=(self.scaler is not None),
                                    dtype=(torch.float16 if not self.config.bf16 else torch.bfloat16)):
                    loss = self.compute_loss(inputs["input_ids"])
                    loss = loss / self.config.gradient_accumulation_steps
                    if self.scaler is not None and not torch.isnan(loss):
                        self.scaler.scale(loss).backward()
                    elif not torch.isnan(loss):
                        loss.backward()
                    if (self.step + 1) % self.config.gradient_accumulation_steps == 0:
                        if self.scaler is not None:
                            self.scaler.unscale_(self.optimizer)  # expect: GL207
                            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 0.1)
                            self.scaler.step(self.optimizer)
                            self.scaler.update()
                        else:
                            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 0.1)
                            self.optimizer.step()
                        self.optimizer.zero_grad()
                self.step += 1


model_name = "HuggingFaceTB/SmolLM2-135M-Instruct"
tokenizer = AutoTokenizer.from_pretrained(model_name)
model = AutoModelForCausalLM.from_pretrained(
    model_name,
    torch_dtype=torch.float16,
).to("cuda" if torch.cuda.is_available() else "cpu")

config = GRPOConfig(device="cuda" if torch.cuda.is_available() else "cpu")
trainer = GRPOTrainer(model, tokenizer, config, ["What is 2 + 3?", "What is 7 - 4?"])
trainer.train()
