"""Result records: findings and reports, and what marks them (waivers, baselines, vouches)."""
