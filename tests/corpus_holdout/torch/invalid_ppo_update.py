"""PPO clipped-surrogate update for a discrete-action actor-critic."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class ActorCritic(nn.Module):
    def __init__(self, obs_dim: int, n_actions: int, hidden: int = 64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
        )
        self.pi = nn.Linear(hidden, n_actions)
        self.v = nn.Linear(hidden, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.pi(h), self.v(h).squeeze(-1)


def normalize_advantages(adv: torch.Tensor) -> torch.Tensor:
    return (adv - adv.mean()) / adv.std()  # expect: div/unguarded-domain


def ppo_loss(model, batch, clip_eps=0.2, vf_coef=0.5, ent_coef=0.01):
    logits, values = model(batch["obs"])
    probs = F.softmax(logits, dim=-1)
    log_probs_all = torch.log(probs)  # expect: log/log-softmax
    new_logp = log_probs_all.gather(1, batch["actions"].unsqueeze(1)).squeeze(1)
    ratio = torch.exp(new_logp - batch["old_logp"])  # expect: exp/unguarded-domain
    adv = normalize_advantages(batch["advantages"])
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * adv
    policy_loss = -torch.min(surr1, surr2).mean()
    value_loss = F.mse_loss(values, batch["returns"])
    entropy = -(probs * log_probs_all).sum(-1).mean()
    return policy_loss + vf_coef * value_loss - ent_coef * entropy


def update(model, optimizer, rollouts, epochs=4, max_grad_norm=0.5):
    for _ in range(epochs):
        for batch in rollouts:
            loss = ppo_loss(model, batch)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            optimizer.step()
