"""The domain: Services, jobs, subscriptions, money, members and people's time, versions."""
